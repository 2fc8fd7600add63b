// qrcode-terminal ships no types; this is the one function the MCP bridge uses.
declare module "qrcode-terminal" {
  const qrcode: {
    generate(input: string, opts: { small?: boolean }, cb: (code: string) => void): void;
  };
  export default qrcode;
}

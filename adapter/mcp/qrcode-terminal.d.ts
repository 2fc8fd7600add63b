// qrcode-terminal ships no types; its one function we use (the MCP bridge and adapter/cli/main.ts print pairing QR codes).
declare module "qrcode-terminal" {
  const qrcode: {
    generate(input: string, opts: { small?: boolean }, cb: (code: string) => void): void;
  };
  export default qrcode;
}

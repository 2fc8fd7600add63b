// qrcode-terminal ships no types. The app uses only its vendored QR encoder (Kazuhiko Arase's, MIT), lazily,
// to draw pairing links as SVG on the devices screen.
declare module "qrcode-terminal/vendor/QRCode/index.js" {
  export default class QRCode {
    constructor(typeNumber: number, errorCorrectLevel: number);
    addData(data: string): void;
    make(): void;
    getModuleCount(): number;
    isDark(row: number, col: number): boolean;
  }
}
declare module "qrcode-terminal/vendor/QRCode/QRErrorCorrectLevel.js" {
  const levels: { L: number; M: number; Q: number; H: number };
  export default levels;
}

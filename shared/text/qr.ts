// A QR code as one SVG path (loaded only when the devices screen shows a pairing link, so it costs the
// initial bundle nothing). The encoder is the one qrcode-terminal vendors, already a dependency.
import QRCode from "qrcode-terminal/vendor/QRCode/index.js";
import levels from "qrcode-terminal/vendor/QRCode/QRErrorCorrectLevel.js";

/** `size` modules square plus a 4-module quiet zone on each side; `d` draws the dark modules. */
export function qrPath(text: string): { size: number; d: string } {
  const qr = new QRCode(-1, levels.M);
  qr.addData(text); // the encoder writes char codes as bytes: fine for a URL (ASCII)
  qr.make();
  const n = qr.getModuleCount();
  let d = "";
  for (let r = 0; r < n; r++) {
    for (let c = 0; c < n; c++) {
      if (!qr.isDark(r, c)) continue;
      // Runs of dark modules in a row become one rectangle: a much shorter path.
      let w = 1;
      while (c + w < n && qr.isDark(r, c + w)) w++;
      d += `M${c + 4} ${r + 4}h${w}v1h-${w}z`;
      c += w - 1;
    }
  }
  return { size: n + 8, d };
}

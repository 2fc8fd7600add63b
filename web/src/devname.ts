// A human name for this device, sent when it pairs ("Pixel 8 · Chrome", "iPhone · Safari",
// "Linux · Chromium"), so the devices screen on another phone tells them apart. Renamable afterwards.

interface UAData {
  brands?: Array<{ brand: string }>;
  mobile?: boolean;
  platform?: string;
  getHighEntropyValues?: (hints: string[]) => Promise<{ model?: string; platform?: string }>;
}

/** The model from the user agent string; Chrome's reduced UA says "K" instead of the model. */
function uaModel(ua: string): string {
  const m = /Android [\d.]+; ([^;)]+?)(?: Build\/|[;)])/.exec(ua);
  const model = m?.[1]?.trim() ?? "";
  return model && model !== "K" && !/^wv$/.test(model) ? model : "";
}

export function deviceKind(ua: string, touchPoints: number, model = ""): string {
  if (/iPhone/.test(ua)) return "iPhone";
  if (/iPad/.test(ua) || (/Macintosh/.test(ua) && touchPoints > 1)) return "iPad";
  if (/Android/.test(ua)) return model || uaModel(ua) || "Android";
  if (/CrOS/.test(ua)) return "Chromebook";
  if (/Macintosh|Mac OS X/.test(ua)) return "Mac";
  if (/Windows/.test(ua)) return "Windows";
  if (/Linux/.test(ua)) return "Linux";
  return "Browser";
}

export function browserName(ua: string, brands: string[] = []): string {
  if (/EdgA?\/|EdgiOS\//.test(ua)) return "Edge";
  if (/OPR\/|Opera/.test(ua)) return "Opera";
  if (/SamsungBrowser\//.test(ua)) return "Samsung Internet";
  if (/Firefox\/|FxiOS\//.test(ua)) return "Firefox";
  if (/CriOS\//.test(ua)) return "Chrome";
  if (/Chrome\/|HeadlessChrome\//.test(ua)) {
    // Chrome and Chromium send the same UA string; only the client hints' brands tell them apart.
    if (brands.includes("Google Chrome")) return "Chrome";
    if (brands.includes("Chromium") || /HeadlessChrome/.test(ua)) return "Chromium";
    return "Chrome";
  }
  if (/Safari\//.test(ua)) return "Safari";
  return "Browser";
}

export async function deviceName(): Promise<string> {
  const ua = navigator.userAgent;
  const data = (navigator as Navigator & { userAgentData?: UAData }).userAgentData;
  let model = "";
  try {
    model = ((await data?.getHighEntropyValues?.(["model"]))?.model ?? "").trim();
  } catch {
    /* hints refused: the UA string is all we have */
  }
  const brands = (data?.brands ?? []).map((b) => b.brand);
  const name = `${deviceKind(ua, navigator.maxTouchPoints || 0, model)} · ${browserName(ua, brands)}`;
  return name.slice(0, 64);
}

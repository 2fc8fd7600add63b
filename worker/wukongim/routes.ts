// WuKongIM webhook endpoint (see docs/wukongim.md). Placeholder until the bridge lands.
import { Hono } from "hono";
import type { Env } from "../env.js";

export const wukongimRoutes = new Hono<{ Bindings: Env }>();

wukongimRoutes.all("*", (c) => c.json({ error: { code: "not_found", message: "no such endpoint" } }, 404));

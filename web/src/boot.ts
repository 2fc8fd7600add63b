// The page's first script (index.html): only web/src/early.ts, so the session's socket is dialled once this small
// chunk is parsed — before the main bundle is (issue 33: parsing and evaluating it took a slow phone 0.5–0.9 s).
import "./early.js";

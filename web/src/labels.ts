// What a person calls a session of their inbox: shared with `lineup sessions` (shared/inbox/names.ts).
export { homeRows, labelsFor, tail, twinKey } from "../../shared/inbox/names.js";

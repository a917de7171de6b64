export { createOfflineFetch } from "./fetch";
export { OfflineScript, scriptFromEnv } from "./script";
export { supportModelReply } from "./support-model";
export { validateRequest } from "./validate";
export type { OfflineContentBlock, OfflineReply, OfflineRequest, OfflineStep, OfflineToolUse } from "./types";

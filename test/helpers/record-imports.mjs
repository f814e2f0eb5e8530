// Loaded with `node --import` into a child process: every module it imports whose URL contains
// SVC_RECORD_IMPORTS_MATCHING is appended to the file SVC_RECORD_IMPORTS_TO, a line each.
import { register } from 'node:module';

register('./record-imports-hooks.mjs', import.meta.url, {
  data: { file: process.env.SVC_RECORD_IMPORTS_TO, matching: process.env.SVC_RECORD_IMPORTS_MATCHING },
});

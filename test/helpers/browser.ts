import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

/**
 * A real browser for the tests that are about pages: Debian's `chromium` package (installed by
 * .ci/run when missing), driven by playwright-core. Nothing is downloaded. SVC_CHROMIUM names another
 * executable. Without one, browser tests report themselves skipped, and fail the run when CI=true.
 */
export const CHROMIUM = process.env.SVC_CHROMIUM ?? '/usr/bin/chromium';
export const hasBrowser = existsSync(CHROMIUM);
if (!hasBrowser && process.env.CI === 'true') {
  throw new Error(
    `CI needs a browser for the page tests: install Debian's chromium (apt-get install chromium) or set SVC_CHROMIUM`,
  );
}

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    // Flags of a closed network: no background fetches, no component updates, no sandbox as root.
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

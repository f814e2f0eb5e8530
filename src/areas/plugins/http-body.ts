import type { Dispatcher } from 'undici';

export class BodyTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`response body exceeds ${limit} bytes`);
  }
}

/** Reads a response body up to `limit` bytes; a larger body is abandoned (not buffered) and throws. */
export async function readCapped(body: Dispatcher.ResponseData['body'], limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
    size += buf.length;
    if (size > limit) {
      body.destroy();
      throw new BodyTooLargeError(limit);
    }
    chunks.push(buf);
  }
  return Buffer.concat(chunks);
}

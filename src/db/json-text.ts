/** JSON documents in text columns (both stores keep them as text): null stays null. */

export const jsonText = (value: unknown): string | null =>
  value === null || value === undefined ? null : JSON.stringify(value);

export const parseJsonText = <T = unknown>(text: string | null): T | null =>
  text === null ? null : (JSON.parse(text) as T);

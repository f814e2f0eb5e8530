import { Ajv } from 'ajv';
import formats from 'ajv-formats';
import { AppError } from '../../http/errors.js';

/** A CloudEvent 1.0 in structured JSON form, as the service publishes it (docs/events.md "The envelope"). */
export interface CloudEvent<D = Record<string, unknown>> {
  specversion: '1.0';
  id: string;
  source: string;
  type: string;
  subject?: string;
  time: string;
  datacontenttype: string;
  data: D;
  /** Causation depth (docs/workflows.md "Loop safety"), present when a workflow run caused the event. */
  svcdepth?: number;
  /** The run that caused the event, with `svcdepth`. */
  causationid?: string;
  /** The span the event was made under (CloudEvents Distributed Tracing), when tracing is on. */
  traceparent?: string;
  tracestate?: string;
}

export interface CloudEventError {
  /** The attribute at fault (`(event)` for the envelope as a whole). */
  attribute: string;
  message: string;
}

export type CloudEventCheck =
  | { valid: true; errors: []; event: Record<string, unknown> }
  | { valid: false; errors: CloudEventError[] };

const REQUIRED = ['id', 'source', 'specversion', 'type'] as const;
const OPTIONAL_STRINGS = ['datacontenttype', 'dataschema', 'subject', 'time'] as const;
const KNOWN = new Set<string>([...REQUIRED, ...OPTIONAL_STRINGS, 'data', 'data_base64']);
// CloudEvents 1.0 §Attribute Naming Convention: lower-case ASCII letters and digits only.
const EXTENSION_NAME = /^[a-z0-9]+$/;
// RFC 2046 media type: type "/" subtype, then optional parameters.
const MEDIA_TYPE = /^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*(\s*;.*)?$/;
// RFC 4648 §4 base64 with padding.
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

const ajv = new Ajv({ strict: false });
(formats as unknown as { default: (a: Ajv) => void }).default(ajv);
const isUriReference = ajv.compile({ type: 'string', format: 'uri-reference' });
const isUri = ajv.compile({ type: 'string', format: 'uri' });

// RFC 3339 §5.6 `date-time`: full-date "T" full-time, offset mandatory ("Z" or ±hh:mm). The ABNF's
// separator is "T" (case-insensitive per §5.6's note on ABNF strings); a space is not accepted.
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/;

/** True when `value` is an RFC 3339 date-time with valid calendar and clock fields. */
export function isRfc3339(value: string): boolean {
  const m = RFC3339.exec(value);
  if (!m) return false;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number);
  if (month < 1 || month > 12) return false;
  if (day < 1 || day > daysInMonth(year, month)) return false;
  if (hour > 23 || minute > 59) return false;
  // A leap second (:60) can only end a minute (RFC 3339 §5.7); its exact UTC minute depends on the offset.
  if (second > 60) return false;
  if (m[9] !== undefined && (Number(m[9]) > 23 || Number(m[10]) > 59)) return false;
  return true;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/**
 * Checks an event in the CloudEvents 1.0 JSON format: the required context attributes, the types and
 * formats of the optional ones (`time` RFC 3339, `dataschema` absolute URI, `source` URI-reference,
 * `datacontenttype` RFC 2046), `data` and `data_base64` never together, and extension attributes
 * (lower-case alphanumeric names; String, Boolean or 32-bit Integer values). A null attribute means
 * "not set" (JSON format §2.4): allowed for optional attributes, an error for required ones.
 */
export function validateCloudEvent(value: unknown): CloudEventCheck {
  const errors: CloudEventError[] = [];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { valid: false, errors: [{ attribute: '(event)', message: 'must be a JSON object' }] };
  }
  const event = value as Record<string, unknown>;
  for (const name of REQUIRED) {
    const v = event[name];
    if (v === undefined || v === null) errors.push({ attribute: name, message: 'is required' });
    else if (typeof v !== 'string' || v.length === 0) {
      errors.push({ attribute: name, message: 'must be a non-empty string' });
    }
  }
  if (typeof event.specversion === 'string' && event.specversion !== '' && event.specversion !== '1.0') {
    errors.push({ attribute: 'specversion', message: `must be "1.0", got "${event.specversion}"` });
  }
  if (typeof event.source === 'string' && event.source !== '' && !isUriReference(event.source)) {
    errors.push({ attribute: 'source', message: 'must be a URI-reference (RFC 3986)' });
  }
  for (const name of OPTIONAL_STRINGS) {
    const v = event[name];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'string' || v.length === 0) {
      errors.push({ attribute: name, message: 'must be a non-empty string' });
      continue;
    }
    if (name === 'time' && !isRfc3339(v)) {
      errors.push({ attribute: 'time', message: 'must be an RFC 3339 timestamp, e.g. 2018-04-05T17:31:00Z' });
    }
    if (name === 'dataschema' && !isUri(v)) {
      errors.push({ attribute: 'dataschema', message: 'must be an absolute URI' });
    }
    if (name === 'datacontenttype' && !MEDIA_TYPE.test(v)) {
      errors.push({ attribute: 'datacontenttype', message: 'must be a media type (RFC 2046)' });
    }
  }
  const hasData = event.data !== undefined && event.data !== null;
  const hasBase64 = event.data_base64 !== undefined && event.data_base64 !== null;
  if (hasData && hasBase64) {
    errors.push({ attribute: 'data_base64', message: 'must not be present together with data' });
  }
  if (hasBase64 && (typeof event.data_base64 !== 'string' || !BASE64.test(event.data_base64))) {
    errors.push({ attribute: 'data_base64', message: 'must be base64 (RFC 4648)' });
  }
  for (const [name, v] of Object.entries(event)) {
    if (KNOWN.has(name)) continue;
    if (!EXTENSION_NAME.test(name)) {
      errors.push({ attribute: name, message: 'extension names are lower-case letters and digits only' });
    } else if (!isExtensionValue(v)) {
      errors.push({ attribute: name, message: 'extension values are strings, booleans or 32-bit integers' });
    }
  }
  return errors.length === 0 ? { valid: true, errors: [], event } : { valid: false, errors };
}

function isExtensionValue(v: unknown): boolean {
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return true;
  return typeof v === 'number' && Number.isInteger(v) && v >= INT32_MIN && v <= INT32_MAX;
}

/** The event, or AppError `EVENT.INVALID` (400) naming every attribute at fault. */
export function assertCloudEvent(value: unknown): CloudEvent<unknown> {
  const check = validateCloudEvent(value);
  if (!check.valid) {
    const first = check.errors[0];
    throw new AppError('EVENT.INVALID', `Invalid CloudEvent: ${first.attribute} ${first.message}`, {
      errors: check.errors,
    });
  }
  return check.event as unknown as CloudEvent<unknown>;
}

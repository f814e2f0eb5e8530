/**
 * An email address as the API's `format: "email"` accepts it (ajv-formats' full-mode rule), for the places
 * that create users outside HTTP: the bootstrap variables and `svc user create`.
 */
const EMAIL =
  /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/i;

export const isEmailAddress = (value: string): boolean => value.length <= 320 && EMAIL.test(value);

/** The shortest password the API accepts. */
export const MIN_PASSWORD_LENGTH = 8;

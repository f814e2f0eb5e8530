/** The secrets every test process runs with (fixed, so a failure reproduces); never used outside tests. */
export const TEST_SECRETS = {
  SVC_JWT_SECRET: 'test-jwt-secret-that-is-long-enough-0123456789',
  SVC_VAULT_ENCRYPTION_KEY: 'test-vault-encryption-key',
};

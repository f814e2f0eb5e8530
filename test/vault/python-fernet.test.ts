import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin, type TestPrincipal } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';

/**
 * A Python with the `cryptography` package: the one on PATH, or Debian's (where .ci/run installs
 * python3-cryptography when PATH's lacks it). A laptop may have neither.
 */
const python = ['python3', '/usr/bin/python3'].find(
  (exe) => spawnSync(exe, ['-c', 'import cryptography'], { encoding: 'utf8' }).status === 0,
);
if (!python && process.env.CI === 'true') {
  throw new Error('CI needs python3 with the cryptography package for the Fernet interoperability test');
}

/**
 * The vault's ciphertexts are Fernet tokens Python's `cryptography` decrypts, with the key file svc
 * generates: the file ends in a newline that svc trims, so Python must strip it too (docs/vault.md).
 */
describe.skipIf(!python)(`vault tokens decrypt with Python's cryptography (${dialectName})`, () => {
  let t: TestApp;
  let who: TestPrincipal;
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-fernet-'));
  beforeAll(async () => {
    // No SVC_VAULT_ENCRYPTION_KEY: svc generates the key file into the data directory, as on a laptop.
    t = await startTestApp({ env: { SVC_VAULT_ENCRYPTION_KEY: '', SVC_DATA_DIR: dataDir } });
    who = await admin(t);
  });
  afterAll(async () => {
    await t.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('a SECRET stored through the API decrypts in Python with the stripped key file', async () => {
    const value = 'tok_live_🔑_über "quoted" and long '.repeat(3);
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/vault_entry',
      headers: who.headers,
      payload: { key: 'PY_INTEROP', kind: 'SECRET', value },
    });
    expect(res.statusCode).toBe(200);
    const row = await t.ctx.store.db
      .selectFrom('vault_entry')
      .select('value')
      .where('id', '=', res.json().id)
      .executeTakeFirstOrThrow();
    expect(row.value).not.toContain('tok_live');
    const keyFile = join(dataDir, 'vault-encryption.key');
    expect(readFileSync(keyFile, 'utf8').endsWith('\n')).toBe(true);
    const script = `
import base64, hashlib, sys
from cryptography.fernet import Fernet
key = open(sys.argv[1]).read().strip()  # the file ends in a newline; svc trims it too
fernet = Fernet(base64.urlsafe_b64encode(hashlib.sha256(key.encode()).digest()))
sys.stdout.write(fernet.decrypt(sys.argv[2].encode()).decode())
`;
    const out = spawnSync(python as string, ['-c', script, keyFile, row.value], { encoding: 'utf8' });
    expect(out.stderr).toBe('');
    expect(out.stdout).toBe(value);
    // Without the strip, the key differs and Python refuses the token.
    const unstripped = spawnSync(
      python as string,
      ['-c', script.replace('.strip()', ''), keyFile, row.value],
      {
        encoding: 'utf8',
      },
    );
    expect(unstripped.status).not.toBe(0);
    expect(unstripped.stderr).toContain('InvalidToken');
  });
});

import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const read = (path: string) => readFileSync(new URL(`../${path}`, import.meta.url), 'utf8');

/**
 * The Dockerfile and compose.yaml cannot be built here (no Docker engine on these machines, README
 * "Containers"): their shape is checked instead, so they do not drift from the code.
 */
describe('container files', () => {
  it('Dockerfile: two stages on node:22-slim, non-root, a healthcheck on /healthz, the real entry point', () => {
    const dockerfile = read('Dockerfile');
    expect(dockerfile.match(/^FROM node:22-slim/gm)).toHaveLength(2);
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toMatch(/^HEALTHCHECK .*\n.*\/healthz/m);
    expect(dockerfile).toContain('ENTRYPOINT ["node", "dist/cli/svc.js"]');
    // What it copies exists, and dist/cli/svc.js is what src/cli/svc.ts compiles to.
    for (const path of [
      'package.json',
      'package-lock.json',
      'tsconfig.json',
      'tsconfig.build.json',
      'src/cli/svc.ts',
    ]) {
      expect(existsSync(new URL(`../${path}`, import.meta.url)), path).toBe(true);
    }
    expect(JSON.parse(read('package.json')).bin.svc).toBe('dist/cli/svc.js');
  });

  it('compose.yaml: PostgreSQL, one API process without a worker, and two workers, all on the same store', () => {
    const compose = parse(read('compose.yaml'), { merge: true });
    const { postgres, api, worker } = compose.services;
    expect(postgres.image).toMatch(/^postgres:/);
    expect(postgres.healthcheck.test.join(' ')).toContain('pg_isready');
    expect(api.command).toEqual(['serve']);
    expect(api.environment.SVC_WORKER).toBe('off');
    expect(worker.command).toEqual(['worker']);
    expect(worker.deploy.replicas).toBe(2);
    for (const s of [api, worker]) {
      expect(s.environment.SVC_DATABASE_URL).toMatch(/^postgres:\/\/.*@postgres:5432\//);
      expect(s.environment.NODE_ENV).toBe('production');
      expect(s.depends_on.postgres.condition).toBe('service_healthy');
    }
  });
});

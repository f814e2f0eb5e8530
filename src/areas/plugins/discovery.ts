import { existsSync, readFileSync, statSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { isAbsolute, join, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Logger } from 'pino';
import { causationHeaders } from '../../lib/causation.js';
import { undici } from '../../lib/undici.js';
import { readCapped } from './http-body.js';
import {
  type ActionContext,
  type ActionHandler,
  InvalidManifestError,
  type NormalisedManifest,
  normaliseManifest,
  type PluginModule,
} from './manifest.js';

/** A plugin this process can run: its manifest, where it came from, and how to call an action. */
export interface LoadedPlugin {
  manifest: NormalisedManifest;
  runtime: 'package' | 'service';
  entrypoint: string;
  plugin_key: string;
  /** Runs one action. The caller has validated the input and owns the timeout (ctx.signal). */
  run(action: string, ctx: ActionContext): Promise<unknown>;
}

export interface DiscoveryOptions {
  builtins: PluginModule[];
  pluginDir?: string;
  serviceUrls: readonly string[];
  log: Logger;
}

const MANIFEST_TIMEOUT_MS = 5_000;
const MANIFEST_MAX_BYTES = 1024 * 1024;
const SERVICE_RESPONSE_MAX_BYTES = 10 * 1024 * 1024;
/** The svc checkout: src/ and dist/ both sit one level below it. */
const SVC_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/**
 * Finds every plugin, in precedence order: built-ins, then package plugins in SVC_PLUGIN_DIR (by
 * folder name), then service plugins in SVC_PLUGIN_SERVICES order. A plugin that fails to load is
 * logged and left out; a second plugin with a name already taken is logged and left out.
 */
export async function discoverPlugins(opts: DiscoveryOptions): Promise<LoadedPlugin[]> {
  const { log } = opts;
  const found: LoadedPlugin[] = [];
  const svcCommit = gitCommit(SVC_ROOT);
  for (const module of opts.builtins) {
    const name = (module.manifest as { name: string }).name;
    found.push(
      fromModule(module, {
        plugin_key: `builtin:${name}`,
        entrypoint: `builtin:${name}`,
        dist_name: 'svc',
        dist_commit: svcCommit,
      }),
    );
  }
  if (opts.pluginDir) {
    for (const folder of await packageFolders(opts.pluginDir, log)) {
      try {
        found.push(await loadPackage(folder));
      } catch (err) {
        log.error(
          { plugin_folder: folder.path, err: { message: (err as Error).message } },
          'plugin package not loaded',
        );
      }
    }
  }
  for (const url of opts.serviceUrls) {
    try {
      found.push(await loadService(url));
    } catch (err) {
      log.error(
        { plugin_service: url, err: { message: (err as Error).message } },
        'plugin service not loaded',
      );
    }
  }
  const byName = new Map<string, LoadedPlugin>();
  for (const plugin of found) {
    const taken = byName.get(plugin.manifest.name);
    if (taken) {
      log.error(
        { plugin: plugin.manifest.name, plugin_key: plugin.plugin_key, kept: taken.plugin_key },
        'plugin name already taken; this one is ignored',
      );
      continue;
    }
    byName.set(plugin.manifest.name, plugin);
  }
  return [...byName.values()];
}

interface Origin {
  plugin_key: string;
  entrypoint: string;
  dist_name: string | null;
  dist_commit: string | null;
}

function fromModule(module: PluginModule, origin: Origin, defaults: { version?: string } = {}): LoadedPlugin {
  const raw = module.manifest as Record<string, unknown>;
  const manifest = normaliseManifest(
    raw && typeof raw === 'object' && raw.version === undefined && defaults.version
      ? { ...raw, version: defaults.version }
      : raw,
  );
  const handlers = module.handlers ?? {};
  for (const action of manifest.actions) {
    if (typeof handlers[action.name] !== 'function') {
      throw new InvalidManifestError(`no handler function for action "${action.name}"`);
    }
  }
  return {
    manifest: {
      ...manifest,
      dist_name: origin.dist_name ?? manifest.dist_name,
      dist_commit: origin.dist_commit ?? manifest.dist_commit,
    },
    runtime: 'package',
    entrypoint: origin.entrypoint,
    plugin_key: origin.plugin_key,
    run: async (action, ctx) => (handlers[action] as ActionHandler)(ctx),
  };
}

// ---- package plugins

/**
 * The plugin folders of SVC_PLUGIN_DIR: every folder in it (and in its `@scope/` folders) except
 * hidden ones and node_modules, plus, when the directory is an npm project (has package.json), each
 * of its dependencies installed in its node_modules.
 */
async function packageFolders(dir: string, log: Logger): Promise<PackageFolder[]> {
  const root = resolve(dir);
  if (!isDirectory(root)) {
    log.error({ plugin_dir: root }, 'SVC_PLUGIN_DIR is not a directory; no package plugins loaded');
    return [];
  }
  const folders: PackageFolder[] = [];
  for (const name of (await readdir(root)).sort()) {
    if (name.startsWith('.') || name === 'node_modules') continue;
    const path = join(root, name);
    if (!isDirectory(path)) continue;
    if (name.startsWith('@')) {
      for (const sub of (await readdir(path)).sort()) {
        if (isDirectory(join(path, sub))) folders.push({ path: join(path, sub), name: `${name}/${sub}` });
      }
    } else {
      folders.push({ path, name });
    }
  }
  const project = readJson(join(root, 'package.json'));
  if (project) {
    const deps = { ...(project.optionalDependencies ?? {}), ...(project.dependencies ?? {}) } as Record<
      string,
      string
    >;
    for (const name of Object.keys(deps).sort()) {
      const path = join(root, 'node_modules', name);
      if (isDirectory(path)) folders.push({ path, name });
      else log.error({ plugin_package: name }, 'plugin package listed in package.json is not installed');
    }
  }
  return folders;
}

interface PackageFolder {
  path: string;
  /** The folder's name under SVC_PLUGIN_DIR (`name` or `@scope/name`), or the dependency's name. */
  name: string;
}

async function loadPackage(folder: PackageFolder): Promise<LoadedPlugin> {
  const pkg = readJson(join(folder.path, 'package.json'));
  const entry = packageEntry(folder.path, pkg);
  const mod = (await import(pathToFileURL(entry).href)) as Record<string, unknown>;
  const module = [mod.plugin, mod.default, mod].find(
    (m): m is PluginModule =>
      typeof m === 'object' && m !== null && typeof (m as { manifest?: unknown }).manifest === 'object',
  );
  if (!module) throw new InvalidManifestError(`${entry} exports no { manifest, handlers }`);
  return fromModule(
    module,
    {
      plugin_key: `package:${typeof pkg?.name === 'string' ? pkg.name : folder.name}`,
      entrypoint: entry,
      dist_name: typeof pkg?.name === 'string' ? pkg.name : null,
      dist_commit: (typeof pkg?.gitHead === 'string' ? pkg.gitHead : null) ?? gitCommit(folder.path),
    },
    { version: typeof pkg?.version === 'string' ? pkg.version : undefined },
  );
}

/** The module to import: package.json `exports` (the "." entry; import or default condition), `main`, or index.*. */
function packageEntry(folder: string, pkg: Record<string, unknown> | undefined): string {
  const candidates: unknown[] = [];
  if (pkg) {
    let exp = pkg.exports as unknown;
    if (exp && typeof exp === 'object' && '.' in (exp as object)) exp = (exp as Record<string, unknown>)['.'];
    if (exp && typeof exp === 'object') {
      const conditions = exp as Record<string, unknown>;
      exp = conditions.import ?? conditions.node ?? conditions.default ?? conditions.require;
    }
    candidates.push(exp, pkg.main);
  }
  candidates.push('index.js', 'index.mjs', 'index.cjs');
  for (const c of candidates) {
    if (typeof c !== 'string') continue;
    const path = resolve(folder, c);
    // An entry outside the package folder (`main: "../x.js"`) is not the package's.
    if (!path.startsWith(folder + sep)) continue;
    if (existsSync(path) && statSync(path).isFile()) return path;
  }
  throw new InvalidManifestError('no entry module (package.json exports or main, or index.js/.mjs/.cjs)');
}

/** The commit of a git checkout at `dir` (its own .git, not a parent's), or null. */
export function gitCommit(dir: string): string | null {
  try {
    let gitDir = join(dir, '.git');
    if (!existsSync(gitDir)) return null;
    if (statSync(gitDir).isFile()) {
      const pointer = /^gitdir:\s*(.+)$/m.exec(readFileSync(gitDir, 'utf8'));
      if (!pointer) return null;
      gitDir = isAbsolute(pointer[1].trim()) ? pointer[1].trim() : resolve(dir, pointer[1].trim());
    }
    const head = readFileSync(join(gitDir, 'HEAD'), 'utf8').trim();
    if (/^[0-9a-f]{40,64}$/.test(head)) return head;
    const ref = /^ref:\s*(\S+)$/.exec(head)?.[1];
    if (!ref) return null;
    const loose = join(gitDir, ref);
    if (existsSync(loose)) return readFileSync(loose, 'utf8').trim() || null;
    const packed = join(gitDir, 'packed-refs');
    if (!existsSync(packed)) return null;
    for (const line of readFileSync(packed, 'utf8').split('\n')) {
      const [sha, name] = line.trim().split(' ');
      if (name === ref && /^[0-9a-f]{40,64}$/.test(sha)) return sha;
    }
    return null;
  } catch {
    return null;
  }
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function readJson(path: string): Record<string, unknown> | undefined {
  if (!existsSync(path)) return undefined;
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new InvalidManifestError(`${path} is not valid JSON: ${(err as Error).message}`);
  }
}

// ---- service plugins (protocol: docs/plugins.md, "Service plugins")

async function loadService(baseUrl: string): Promise<LoadedPlugin> {
  const base = baseUrl.replace(/\/+$/, '');
  const res = await undici().request(`${base}/manifest`, {
    method: 'GET',
    headers: { accept: 'application/json' },
    signal: AbortSignal.timeout(MANIFEST_TIMEOUT_MS),
  });
  const raw = await readCapped(res.body, MANIFEST_MAX_BYTES);
  if (res.statusCode !== 200) throw new Error(`GET ${base}/manifest answered ${res.statusCode}`);
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new InvalidManifestError(`GET ${base}/manifest did not answer JSON`);
  }
  const manifest = normaliseManifest(body);
  return {
    manifest,
    runtime: 'service',
    entrypoint: base,
    plugin_key: `service:${base}`,
    run: (action, ctx) => invokeService(base, manifest.name, action, ctx),
  };
}

async function invokeService(
  base: string,
  plugin: string,
  action: string,
  ctx: ActionContext,
): Promise<unknown> {
  const res = await undici().request(`${base}/invoke`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json',
      ...(ctx.idempotencyKey ? { 'idempotency-key': ctx.idempotencyKey } : {}),
      ...causationHeaders(ctx.causation),
    },
    body: JSON.stringify({
      plugin,
      action,
      config: ctx.config,
      input: ctx.input,
      idempotency_key: ctx.idempotencyKey ?? null,
    }),
    signal: ctx.signal,
  });
  const raw = await readCapped(res.body, SERVICE_RESPONSE_MAX_BYTES);
  let body: unknown;
  try {
    body = raw.length > 0 ? JSON.parse(raw.toString('utf8')) : undefined;
  } catch {
    body = undefined;
  }
  const obj = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  if (res.statusCode >= 200 && res.statusCode < 300) {
    if (!('output' in obj))
      throw new Error(`plugin service answered ${res.statusCode} without an "output" field`);
    return obj.output;
  }
  const error = obj.error as { message?: unknown } | undefined;
  const message =
    typeof error?.message === 'string'
      ? error.message
      : typeof obj.message === 'string'
        ? obj.message
        : undefined;
  throw new Error(`plugin service answered ${res.statusCode}${message ? `: ${message}` : ''}`);
}

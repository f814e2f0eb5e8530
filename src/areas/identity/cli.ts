import { type CliCommand, CliError } from '../../cli/command.js';
import { AppError } from '../../http/errors.js';

const text = (v: unknown, name: string): string => {
  if (typeof v !== 'string' || v === '') throw new CliError(`--${name} is required`);
  return v;
};

/** `svc user create` and `svc api-key create`: set-up without the HTTP API. */
export const identityCommands: CliCommand[] = [
  {
    name: 'user create',
    usage: 'user create',
    summary: '--email E --password P [--name N] [--role KEY ...]',
    options: {
      email: { type: 'string' },
      password: { type: 'string' },
      name: { type: 'string' },
      role: { type: 'string', multiple: true },
    },
    async run(ctx, v) {
      try {
        const user = await ctx.services.identity.createUser(null, {
          email: text(v.email, 'email'),
          password: text(v.password, 'password'),
          name: typeof v.name === 'string' ? v.name : null,
          role_keys: (v.role as string[] | undefined) ?? [],
        });
        console.log(JSON.stringify(user, null, 2));
      } catch (err) {
        if (err instanceof AppError) throw new CliError(err.message);
        throw err;
      }
    },
  },
  {
    name: 'api-key create',
    usage: 'api-key create',
    summary: '--email E --name N --scope S ... [--expires-in SECONDS]',
    options: {
      email: { type: 'string' },
      name: { type: 'string' },
      description: { type: 'string' },
      scope: { type: 'string', multiple: true },
      'expires-in': { type: 'string' },
    },
    async run(ctx, v) {
      const identity = ctx.services.identity;
      const user = await identity.findUserByEmail(text(v.email, 'email'));
      if (!user) throw new CliError(`no active user with email ${v.email}`);
      const expiresIn = Number(v['expires-in'] ?? 90 * 24 * 3600);
      if (!Number.isInteger(expiresIn)) throw new CliError('--expires-in must be a whole number of seconds');
      try {
        const scopes = await identity.scopesOfUser(user.id);
        const key = await identity.createApiKey(
          { userId: user.id, scopes, authPath: 'password' },
          {
            name: text(v.name, 'name'),
            description: typeof v.description === 'string' ? v.description : null,
            scope_keys: (v.scope as string[] | undefined) ?? [],
            expires_in: expiresIn,
          },
        );
        console.log(JSON.stringify(key, null, 2));
      } catch (err) {
        if (err instanceof AppError) throw new CliError(`${err.code}: ${err.message}`);
        throw err;
      }
    },
  },
];

import { type CliCommand, CliError } from '../../cli/command.js';

const text = (v: unknown, name: string): string => {
  if (typeof v !== 'string' || v === '') throw new CliError(`--${name} is required`);
  return v;
};

/** `svc user create` and `svc api-key create`: set-up without the HTTP API. */
export const identityCommands: CliCommand[] = [
  {
    name: 'user create',
    summary: 'create a user, with the rules of POST /user; prints the user as JSON',
    options: {
      email: { type: 'string', value: 'E', required: true, help: "the user's email address" },
      password: { type: 'string', value: 'P', required: true, help: 'at least 8 characters' },
      name: { type: 'string', value: 'N', help: 'display name' },
      role: {
        type: 'string',
        value: 'KEY',
        multiple: true,
        help: 'a role key to grant (repeatable), e.g. admin',
      },
    },
    async run(ctx, v) {
      // A refusal (an AppError) is printed by svc as one line, like a usage mistake.
      const user = await ctx.services.identity.createUser(null, {
        email: text(v.email, 'email'),
        password: text(v.password, 'password'),
        name: typeof v.name === 'string' ? v.name : null,
        role_keys: (v.role as string[] | undefined) ?? [],
      });
      console.log(JSON.stringify(user, null, 2));
    },
  },
  {
    name: 'api-key create',
    summary: "create an API key for a user, within the user's own scopes; prints the token once",
    options: {
      email: { type: 'string', value: 'E', required: true, help: 'the email of the user who owns the key' },
      name: { type: 'string', value: 'N', required: true, help: 'a name for the key' },
      description: { type: 'string', value: 'D', help: 'a description' },
      scope: { type: 'string', value: 'S', multiple: true, required: true, help: 'a scope key (repeatable)' },
      'expires-in': {
        type: 'string',
        value: 'SECONDS',
        help: 'lifetime in seconds (default 7776000, 90 days)',
      },
    },
    async run(ctx, v) {
      const identity = ctx.services.identity;
      const user = await identity.findUserByEmail(text(v.email, 'email'));
      if (!user) throw new CliError(`no active user with email ${v.email}`);
      const expiresIn = Number(v['expires-in'] ?? 90 * 24 * 3600);
      if (!Number.isInteger(expiresIn)) throw new CliError('--expires-in must be a whole number of seconds');
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
    },
  },
];

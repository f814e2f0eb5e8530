# svc in a container: a build stage compiles (better-sqlite3's native addon, the TypeScript, the console),
# a slim runtime stage runs as the unprivileged `node` user. Not built in this project's CI (no Docker
# engine there): keep it plain. `docker build -t svc .` then see compose.yaml.

FROM node:22-slim AS build
WORKDIR /app
# Toolchain for better-sqlite3 when no prebuilt binary matches.
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY console ./console
# `npm ci` runs the build (the `prepare` script: the server and the console, into dist/); then only
# production dependencies are kept.
RUN npm ci --no-audit --no-fund && npm prune --omit=dev --no-audit --no-fund

FROM node:22-slim
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    SVC_DATA_DIR=/data \
    SVC_DATABASE_URL=sqlite:/data/svc.db
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["node", "dist/cli/svc.js"]
CMD ["serve"]

/**
 * serveModel serves a built model as the controller would, with the Lua balancer: its split into nginx.conf and pushed
 * tables, the config set written in `dir`, nginx started on `port`, the tables pushed through `control`.
 */
import { pushTables } from '../../src/actors/nginx.js';
import type { NginxModel } from '../../src/model/nginx-model.js';
import { writeConfigSet } from '../../src/nginx/files.js';
import { loadTemplate } from '../../src/render/load.js';
import { render } from '../../src/render/render.js';
import { DynamicSplit } from '../../src/sync/dynamic-split.js';
import { type RunningNginx, startNginx } from './nginx.js';

export async function serveModel(
  dir: string,
  port: number,
  control: Parameters<typeof pushTables>[0],
  built: NginxModel,
): Promise<RunningNginx> {
  const { model, tables } = new DynamicSplit().split(built);
  await writeConfigSet(dir, render(model, await loadTemplate()), model.certificates);
  const nginx = await startNginx(dir, port);
  await pushTables(control, tables, null);
  return nginx;
}

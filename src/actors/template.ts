import { fromCallback, fromPromise, type EventObject } from 'xstate';
import type { LoadTemplateInput, CompiledTemplate } from '../../machines/template.machine.js';
import type { NginxModel } from '../model/nginx-model.js';
import type { Logger } from '../log.js';
import { loadCheckedTemplate } from '../render/load.js';
import { watchTemplateFiles } from '../render/watch.js';

/**
 * templateActors implements the template machine's effects: load = read, compile and
 * test-render against the model of the last sync the machine was sent (so a template that
 * breaks on real data is refused), or `bootModel` before the first; watch = chokidar on the
 * file and its partials.
 */
export function templateActors(file: string, bootModel: NginxModel, log: Logger) {
  return {
    loadTemplate: fromPromise<CompiledTemplate, LoadTemplateInput>(async ({ input }) => {
      const template = await loadCheckedTemplate(file, input.model ?? bootModel);
      log.info({ file, attempt: input.attempt }, 'nginx template loaded');
      return template;
    }),
    watchTemplate: fromCallback<EventObject, void>(({ sendBack }) => {
      const stop = watchTemplateFiles(file, (path) => {
        log.info({ path }, 'template file changed');
        sendBack({ type: 'template.fileChanged' });
      });
      return () => void stop();
    }),
  };
}

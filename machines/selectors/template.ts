/** What others may read of the template actor (the status page): typed selectors over its snapshot. */
import type { NginxModel } from '../../src/model/nginx-model.js';
import type { TemplateContext } from '../template.machine.js';
import { isMachineSnapshot, type SnapshotView } from './state.js';

/** TemplateView is the template actor's snapshot as its selectors read it. */
export type TemplateView = SnapshotView<TemplateContext>;

/** selectLastModel is the model of the last sync (what nginx is asked to serve), null before the first. */
export function selectLastModel(template: TemplateView | undefined): NginxModel | null {
  return template?.context.model ?? null;
}

/** isTemplateSnapshot says whether a looked-up snapshot is the template machine's. */
export function isTemplateSnapshot(snapshot: unknown): snapshot is TemplateView {
  return isMachineSnapshot(snapshot, 'template');
}

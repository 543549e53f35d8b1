/**
 * The admission judge's worker thread (src/http/worker-judge.ts starts it): it keeps a mirror of the controller's
 * cache, fed with the objects that changed, and judges whole review bodies against it one at a time, so that neither
 * parsing a large review nor building with it runs on the controller's event loop (/healthz, the sync).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { AdmissionJudge, type JudgeOptions } from '../model/admission.js';
import { Mirror, type ToWorker } from './judge-mirror.js';
import { judgeReview } from './webhook.js';

/** JudgeWorkerData is what the worker is started with. */
export interface JudgeWorkerData {
  readonly judgeWorker: true;
  readonly options: JudgeOptions;
}

const data = workerData as JudgeWorkerData | null;
// Only as the judge's worker: imported anywhere else (a test runner's own worker thread), it does nothing.
if (parentPort && data?.judgeWorker === true) {
  const port = parentPort;
  const { options } = data;
  const mirror = new Mirror();
  const judge = new AdmissionJudge();
  port.on('message', (message: ToWorker) => {
    if (message.type === 'objects') mirror.apply(message.changes);
    else if (message.type === 'warm') judge.warm(mirror.snapshot(), options);
    else {
      const judged = judgeReview(message.body, (operation, ingress) =>
        judge.judge(mirror.snapshot(), options, operation, ingress),
      );
      port.postMessage({ id: message.id, judged });
    }
  });
}

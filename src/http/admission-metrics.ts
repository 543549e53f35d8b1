/**
 * The admission webhook's metrics, under ingress-nginx's names (its collectors/admission.go and the check counters of
 * controller.go), those that mean something here: the judge builds the model with the candidate and renders nothing,
 * so `admission_render_ingresses`, `admission_render_duration` and `admission_config_size` (a rendered nginx.conf)
 * have nothing to measure and are not there.
 */
import { Counter, Gauge, type Registry } from 'prom-client';

/** ReviewObservation is one judged review. */
export interface ReviewObservation {
  readonly namespace: string;
  readonly name: string;
  readonly allowed: boolean;
  /** the Ingresses of the build that judged it; undefined when it was allowed without one (not ours, a DELETE) */
  readonly tested: number | undefined;
  /** the judgement (the build), seconds */
  readonly testedSeconds: number;
  /** from the whole review read to the answer made (parsing and judging), seconds */
  readonly roundtripSeconds: number;
}

/** AdmissionMetrics registers the webhook's metrics; only a controller with `--validating-webhook` has them. */
export class AdmissionMetrics {
  private readonly testedIngresses: Gauge;
  private readonly testedDuration: Gauge;
  private readonly roundtrip: Gauge;
  private readonly checks: Counter<'namespace' | 'ingress'>;
  private readonly checkErrors: Counter<'namespace' | 'ingress'>;

  constructor(registry: Registry) {
    const registers = [registry];
    this.testedIngresses = new Gauge({
      name: 'nginx_ingress_controller_admission_tested_ingresses',
      help: 'The length of ingresses processed by the admission controller',
      registers,
    });
    this.testedDuration = new Gauge({
      name: 'nginx_ingress_controller_admission_tested_duration',
      help: 'The processing duration of the admission controller tests (float seconds)',
      registers,
    });
    this.roundtrip = new Gauge({
      name: 'nginx_ingress_controller_admission_roundtrip_duration',
      help: 'The complete duration of the admission controller at the time to process a new event (float seconds)',
      registers,
    });
    this.checks = new Counter({
      name: 'nginx_ingress_controller_check_success',
      help: 'Cumulative number of Ingress controller syntax check operations',
      labelNames: ['namespace', 'ingress'],
      registers,
    });
    this.checkErrors = new Counter({
      name: 'nginx_ingress_controller_check_errors',
      help: 'Cumulative number of Ingress controller errors during syntax check operations',
      labelNames: ['namespace', 'ingress'],
      registers,
    });
  }

  /** observe records a review; one allowed without a build is not a check, as in ingress-nginx. */
  observe(review: ReviewObservation): void {
    if (review.tested === undefined) return;
    const labels = { namespace: review.namespace, ingress: review.name };
    if (review.allowed) {
      this.checks.inc(labels);
      // ingress-nginx sets the gauges after a check that passed only.
      this.testedIngresses.set(review.tested);
      this.testedDuration.set(review.testedSeconds);
      this.roundtrip.set(review.roundtripSeconds);
    } else this.checkErrors.inc(labels);
  }
}

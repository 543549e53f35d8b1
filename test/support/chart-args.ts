/**
 * ingress-nginx's Helm chart, as its controller container is run with default values
 * (charts/ingress-nginx/templates/controller-deployment.yaml and _params.tpl, values.yaml v4.15): the args the tests
 * that take its place give the controller, one list for all of them.
 */

/** CHART_CERTIFICATES is where the chart mounts the webhook's certificate (controller.admissionWebhooks). */
export const CHART_CERTIFICATES = '/usr/local/certificates';

/**
 * chartDefaultArgs are the chart's controller args with default values, after the binary's path: the webhook's port
 * and its certificate's folder as given (the tests run several on one machine).
 */
export const chartDefaultArgs = (webhookPort: number = 8443, certDir: string = CHART_CERTIFICATES): string[] => [
  '--publish-service=$(POD_NAMESPACE)/ingress-nginx-controller',
  '--election-id=ingress-nginx-leader',
  '--controller-class=k8s.io/ingress-nginx',
  '--ingress-class=nginx',
  '--configmap=$(POD_NAMESPACE)/ingress-nginx-controller',
  `--validating-webhook=:${webhookPort}`,
  `--validating-webhook-certificate=${certDir}/cert`,
  `--validating-webhook-key=${certDir}/key`,
];

/** CHART_BINARY is the chart's first arg, the image's controller binary (the controller takes it and goes on). */
export const CHART_BINARY = '/nginx-ingress-controller';

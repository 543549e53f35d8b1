/** KubeconfigError is a kubeconfig file that cannot be read as one: the operator's to fix (exit 1, one line). */
export class KubeconfigError extends Error {
  override name = 'KubeconfigError';
}

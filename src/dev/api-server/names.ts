/** The name formats kube-apiserver checks (k8s.io/apimachinery validation), shared by the built-in kinds and CRDs. */

/** DNS_SUBDOMAIN: a lowercase RFC 1123 subdomain (dot-separated labels). */
export const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** DNS_LABEL: a lowercase RFC 1123 label. */
export const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** DNS_1035_LABEL: a lowercase RFC 1035 label (it starts with a letter). */
export const DNS_1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

// Package validation holds every rule a ValkeyCluster or ValkeyNode must follow
// beyond what the CRD schema checks (enums, minimums, defaults).
//
// Each rule is a small function returning a field.ErrorList whose entries name the
// offending field (for example spec.users[1].name). Two callers use the package:
// the validating webhooks, which turn the list into an Invalid API error, and every
// controller, which runs the same checks at the start of a reconcile and sets the
// InvalidSpec condition instead of acting, so the operator stays safe when the
// webhook is turned off.
//
// The package repeats the schema's simple checks too (enums, minimums), because a
// controller guard may see objects that never went through a webhook.
package validation

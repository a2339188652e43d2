package handlers

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/webhooks/paths"
)

// Setup registers both validating webhooks with the manager's webhook server, at the
// paths of the paths package.
func Setup(mgr ctrl.Manager, operators Identities) error {
	err := ctrl.NewWebhookManagedBy(mgr, &v1alpha1.ValkeyCluster{}).
		WithValidator(ClusterValidator{}).
		WithValidatorCustomPath(paths.ValidateValkeyCluster).
		Complete()
	if err != nil {
		return fmt.Errorf("register the ValkeyCluster webhook: %w", err)
	}
	err = ctrl.NewWebhookManagedBy(mgr, &v1alpha1.ValkeyNode{}).
		WithValidator(NodeValidator{Operators: operators}).
		WithValidatorCustomPath(paths.ValidateValkeyNode).
		Complete()
	if err != nil {
		return fmt.Errorf("register the ValkeyNode webhook: %w", err)
	}
	return nil
}

package acl

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

func TestBackupUsers(t *testing.T) {
	pw := systemPasswords{v1alpha1.UserBackup: {"b"}, v1alpha1.UserRestore: {"r"}}
	idle := backupUsers(pw, false)
	if idle[0].Name != v1alpha1.UserBackup || idle[0].Rules[0] != "on" || strings.Contains(idle[0].Line(), "~") {
		t.Errorf("_backup: %s (want on, no key access)", idle[0].Line())
	}
	if idle[1].Name != v1alpha1.UserRestore || idle[1].Rules[0] != "off" {
		t.Errorf("_restore outside a restore: %s (want off)", idle[1].Line())
	}
	if restoring := backupUsers(pw, true); restoring[1].Rules[0] != "on" || !strings.Contains(restoring[1].Line(), "+restore") {
		t.Errorf("_restore during a restore: %s", restoring[1].Line())
	}
}

func TestUsersWithheldUntilRestored(t *testing.T) {
	users := []User{{Name: "alice"}}
	vc := &v1alpha1.ValkeyCluster{}
	if got := withheldUntilRestored(vc, users); len(got) != 1 {
		t.Error("a cluster without data source lost its users")
	}
	vc.Spec.DataSource = &v1alpha1.DataSource{BackupName: "b"}
	if got := withheldUntilRestored(vc, users); len(got) != 0 {
		t.Error("users published before the restore")
	}
	vc.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionRestored, Status: metav1.ConditionTrue}}
	if got := withheldUntilRestored(vc, users); len(got) != 1 {
		t.Error("users withheld after the restore")
	}
}

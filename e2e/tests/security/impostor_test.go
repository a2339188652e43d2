//go:build e2e

package security

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
	"github.com/valkey-operator/valkey-operator/images"
)

// A cluster on an image whose valkey-server is Redis 7.0 (localkube images --impostor:
// docker.io/valkey/valkey:impostor, a tag admission cannot tell apart), with system users
// and a user with a password. Such a server would stop at the primaryauth line of
// valkey.conf and print it; the start command refuses it first. The cluster says why it
// cannot run, naming the server's version, and no status of the cluster's objects, no
// event of the namespace and no line of any operator component's log holds a password
// of the cluster's Secrets.
func TestImpostorServer(t *testing.T) {
	f := framework.NewFeature(suite, "a server that is not Valkey 8.0 or later").
		Assess("the cluster says why it cannot run and no password leaks", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			ns := framework.Namespace(ctx)
			impostor, err := k.ComponentImage(images.ComponentImpostor)
			if err != nil {
				t.Fatalf("%v (the suite needs localkube images --impostor: hack/e2e.sh builds it for the security suite)", err)
			}

			const userSecret = "app-password"
			appPassword := "app-" + framework.RandomSuffix(24)
			if err := k.Client.Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: userSecret, Namespace: ns},
				StringData: map[string]string{"password": appPassword},
			}); err != nil {
				t.Fatal(err)
			}
			vc := framework.NewValkeyCluster(ns, "impostor", 1, 1)
			vc.Spec.Image = impostor.Ref
			vc.Spec.Users = append(vc.Spec.Users, v1alpha1.UserSpec{Name: "app",
				PasswordSecret: &v1alpha1.PasswordSecretRef{Name: userSecret, Keys: []string{"password"}}, Permissions: "+@read ~app:*"})
			if err := k.Client.Create(ctx, vc); err != nil {
				t.Fatalf("create (admission must not tell the impostor's tag from Valkey's): %v", err)
			}

			// The cluster names the cause and the server's version.
			err = framework.WaitFor(ctx, k.Client, vc, 4*time.Minute, "Ready=False "+v1alpha1.ReasonUnsupportedServer, func(vc *v1alpha1.ValkeyCluster) (bool, string) {
				ready := meta.FindStatusCondition(vc.Status.Conditions, v1alpha1.ConditionReady)
				if ready == nil {
					return false, "no Ready condition"
				}
				ok := ready.Status == metav1.ConditionFalse && ready.Reason == v1alpha1.ReasonUnsupportedServer &&
					strings.Contains(ready.Message, "this image's valkey-server is Redis 7.") &&
					strings.Contains(ready.Message, "the operator runs Valkey 8.0 or later") && vc.Status.State == v1alpha1.StateFailed
				return ok, fmt.Sprintf("state %s, Ready=%s %s: %s", vc.Status.State, ready.Status, ready.Reason, ready.Message)
			})
			if err != nil {
				t.Fatal(err)
			}
			ready := meta.FindStatusCondition(vc.Status.Conditions, v1alpha1.ConditionReady)
			t.Logf("state %s, Ready=False %s: %s", vc.Status.State, ready.Reason, ready.Message)

			// The cause is told on the cluster once its members kept it a few seconds:
			// wait for that event, so the events checked below include it.
			if err := framework.Until(ctx, time.Minute, "a Warning event "+v1alpha1.ReasonUnsupportedServer+" on the cluster", func(ctx context.Context) (bool, string, error) {
				for _, e := range k.Events(ctx, t, ns, v1alpha1.ReasonUnsupportedServer) {
					if e.Regarding.Kind == "ValkeyCluster" && e.Regarding.Name == vc.Name {
						return strings.Contains(e.Note, "Redis 7."), e.Note, nil
					}
				}
				return false, "no event yet", nil
			}); err != nil {
				t.Error(err)
			}

			secrets := clusterPasswords(ctx, t, k, vc, userSecret)
			where := map[string]string{}
			for name, text := range statusTexts(ctx, t, k, vc) {
				where["status of "+name] = text
			}
			var evs eventsv1.EventList
			if err := k.Client.List(ctx, &evs, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			for i := range evs.Items {
				b, _ := json.Marshal(&evs.Items[i])
				where["event "+evs.Items[i].Name] = string(b)
			}
			logs, err := k.OperatorLogs(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for name, log := range logs {
				where["log of "+name] = log
			}
			for name, text := range where {
				if found := framework.FindSecrets(text, secrets); len(found) > 0 {
					t.Errorf("%s holds the passwords of %s", name, strings.Join(found, ", "))
				}
			}
			t.Logf("%d passwords looked for in %d statuses, events and logs", len(secrets), len(where))
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// clusterPasswords are the passwords of the cluster's Secrets by "Secret/key": each
// system user's (the values of the system users Secret's keys named after a user) and
// the user's.
func clusterPasswords(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster, userSecret string) map[string]string {
	t.Helper()
	out := map[string]string{}
	var system corev1.Secret
	if err := k.Client.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: v1alpha1.SystemUsersSecretName(vc.Name)}, &system); err != nil {
		t.Fatal(err)
	}
	for key, v := range system.Data {
		if strings.HasPrefix(key, "_") {
			out[system.Name+"/"+key] = string(v)
		}
	}
	for _, u := range []string{v1alpha1.UserOperator, v1alpha1.UserReplication} {
		if out[system.Name+"/"+u] == "" {
			t.Fatalf("Secret %s has no password of %s", system.Name, u)
		}
	}
	var user corev1.Secret
	if err := k.Client.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: userSecret}, &user); err != nil {
		t.Fatal(err)
	}
	out[userSecret+"/password"] = string(user.Data["password"])
	return out
}

// statusTexts are the statuses, as JSON, of the cluster and every object made for it:
// its ValkeyNodes, their pods (the containers' termination messages are a server's
// last log lines) and workloads.
func statusTexts(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster) map[string]string {
	t.Helper()
	out := map[string]string{}
	add := func(kind, name string, status any) {
		b, err := json.Marshal(status)
		if err != nil {
			t.Fatal(err)
		}
		out[kind+" "+name] = string(b)
	}
	if err := k.Client.Get(ctx, client.ObjectKeyFromObject(vc), vc); err != nil {
		t.Fatal(err)
	}
	add("ValkeyCluster", vc.Name, vc.Status)
	for _, vn := range k.Members(ctx, t, vc) {
		add("ValkeyNode", vn.Name, vn.Status)
	}
	mine := []client.ListOption{client.InNamespace(vc.Namespace), client.MatchingLabels{v1alpha1.LabelInstance: vc.Name}}
	var pods corev1.PodList
	if err := k.Client.List(ctx, &pods, mine...); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) == 0 {
		t.Error("the cluster has no pods: nothing ran the impostor's server")
	}
	for _, p := range pods.Items {
		add("Pod", p.Name, p.Status)
	}
	var sets appsv1.StatefulSetList
	if err := k.Client.List(ctx, &sets, mine...); err != nil {
		t.Fatal(err)
	}
	for _, s := range sets.Items {
		add("StatefulSet", s.Name, s.Status)
	}
	var deps appsv1.DeploymentList
	if err := k.Client.List(ctx, &deps, mine...); err != nil {
		t.Fatal(err)
	}
	for _, d := range deps.Items {
		add("Deployment", d.Name, d.Status)
	}
	return out
}

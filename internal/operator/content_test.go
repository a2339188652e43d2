package operator_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/internal/envtestenv"
	"github.com/valkey-operator/valkey-operator/internal/operator"
)

func TestMain(m *testing.M) {
	code := m.Run()
	envtestenv.Stop()
	os.Exit(code)
}

// TestContentCache runs the managers' client against a real API server: Secrets and
// ConfigMaps of the operator are read by name with their content, a tenant's unlabelled
// one is not found, a change is seen, a list is refused, and a deleted one is forgotten.
func TestContentCache(t *testing.T) {
	cfg, err := envtestenv.Config()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	direct, err := client.New(cfg, client.Options{Scheme: operator.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ns := fmt.Sprintf("content-%d", time.Now().UnixNano()%1e9)
	must(t, direct.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))

	opts := operator.CacheOptions([]string{ns})
	opts.Scheme = operator.Scheme()
	informers, err := cache.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = informers.Start(ctx) }()
	c, err := operator.NewClient(cfg, client.Options{Scheme: operator.Scheme(), Cache: &client.CacheOptions{Reader: informers}})
	if err != nil {
		t.Fatal(err)
	}

	ours := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vk-system-users",
		Labels: map[string]string{"app.kubernetes.io/managed-by": "valkey-operator"}}, Data: map[string][]byte{"_operator": []byte("one")}}
	theirs := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-password"}, Data: map[string][]byte{"p": []byte("x")}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vk-abcde",
		Labels: map[string]string{"app.kubernetes.io/managed-by": "valkey-operator"}}, Data: map[string]string{"valkey.conf": "port 6379"}}
	for _, o := range []client.Object{ours, theirs, cm} {
		must(t, direct.Create(ctx, o))
	}

	key := client.ObjectKeyFromObject(ours)
	read := func(want string) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			var s corev1.Secret
			if err := c.Get(ctx, key, &s); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			return string(s.Data["_operator"]) == want, nil
		})
		if err != nil {
			t.Fatalf("the operator's Secret never read %q: %v", want, err)
		}
	}
	read("one")
	var got corev1.ConfigMap
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return c.Get(ctx, client.ObjectKeyFromObject(cm), &got) == nil, nil
	}); err != nil || got.Data["valkey.conf"] != "port 6379" {
		t.Fatalf("the operator's ConfigMap: %v, %v", got.Data, err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(theirs), &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("a tenant's unlabelled Secret: %v, want not found", err)
	}
	if err := c.List(ctx, &corev1.SecretList{}, client.InNamespace(ns)); err == nil {
		t.Error("a list of Secrets was served")
	}

	ours.Data["_operator"] = []byte("two")
	must(t, direct.Update(ctx, ours))
	read("two")

	must(t, direct.Delete(ctx, ours))
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(c.Get(ctx, key, &corev1.Secret{})), nil
	}); err != nil {
		t.Fatalf("a deleted Secret is still read: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

package framework

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func fastPolling(t *testing.T) {
	old := PollInterval
	PollInterval = 10 * time.Millisecond
	t.Cleanup(func() { PollInterval = old })
}

func TestUntilTimeoutSaysWhatWasSeen(t *testing.T) {
	fastPolling(t)
	n := 0
	err := Until(context.Background(), 50*time.Millisecond, "the answer", func(context.Context) (bool, string, error) {
		n++
		if n%2 == 0 {
			return false, "", errors.New("api blip")
		}
		return false, "got 41", nil
	})
	var te *TimeoutError
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "timed out after 50ms waiting for the answer; last seen: ") {
		t.Fatalf("error %v", err)
	}
	if n < 2 {
		t.Errorf("checked %d times", n)
	}
}

func TestUntilStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := Until(ctx, time.Minute, "x", func(context.Context) (bool, string, error) { return false, "", nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
}

func readyLater(c client.Client, pod *corev1.Pod, after time.Duration) {
	time.Sleep(after)
	p := pod.DeepCopy()
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	_ = c.Status().Update(context.Background(), p)
}

func TestWaitForPodReady(t *testing.T) {
	fastPolling(t)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(pod).WithStatusSubresource(pod).Build()
	ctx := context.Background()

	err := WaitFor(ctx, c, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}, 50*time.Millisecond, "become Ready", PodReady)
	if err == nil || !strings.Contains(err.Error(), "waiting for Pod ns/p to become Ready; last seen: p phase=Pending") {
		t.Fatalf("error %v", err)
	}
	go readyLater(c, pod, 30*time.Millisecond)
	got := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	if err := WaitFor(ctx, c, got, 5*time.Second, "become Ready", PodReady); err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != corev1.PodRunning {
		t.Errorf("WaitFor left phase %s in the object", got.Status.Phase)
	}
}

func TestWaitForMissingObject(t *testing.T) {
	fastPolling(t)
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).Build()
	err := WaitFor(context.Background(), c, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n9"}}, 30*time.Millisecond, "become schedulable", NodeBecomesSchedulable)
	if err == nil || !strings.HasSuffix(err.Error(), "waiting for Node n9 to become schedulable; last seen: not found") {
		t.Fatalf("error %v", err)
	}
}

func TestWaitForListAndDeletion(t *testing.T) {
	fastPolling(t)
	pods := []client.Object{
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", Labels: map[string]string{"app": "x"}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b", Labels: map[string]string{"app": "y"}}},
	}
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(pods...).Build()
	ctx := context.Background()
	var list corev1.PodList
	err := WaitForList(ctx, c, &list, 30*time.Millisecond, "pods app=x Ready", PodsReady(1), client.MatchingLabels{"app": "x"})
	if err == nil || !strings.Contains(err.Error(), "1 pods, 0 Ready (want 1): a phase=") {
		t.Fatalf("error %v", err)
	}
	go func() {
		time.Sleep(30 * time.Millisecond)
		_ = c.Delete(ctx, pods[0])
	}()
	if err := WaitForDeletion(ctx, c, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}, 5*time.Second); err != nil {
		t.Fatal(err)
	}
}

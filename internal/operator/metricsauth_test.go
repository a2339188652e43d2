package operator

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/valkey-operator/valkey-operator/internal/envtestenv"
)

func TestBearerToken(t *testing.T) {
	for _, tc := range []struct {
		header, token string
		ok            bool
	}{
		{"Bearer abc", "abc", true},
		{"bearer  abc ", "abc", true},
		{"BEARER abc", "abc", true},
		{"", "", false},
		{"Bearer", "", false},
		{"Bearer ", "", false},
		{"Basic dXNlcjpwYXNz", "", false},
	} {
		if token, ok := bearerToken(tc.header); token != tc.token || ok != tc.ok {
			t.Errorf("bearerToken(%q) = %q, %v; want %q, %v", tc.header, token, ok, tc.token, tc.ok)
		}
	}
}

func TestAnswersExpireAndStayBounded(t *testing.T) {
	now := time.Unix(1000, 0)
	s := newAnswers[bool]()
	s.put("a", true, now, time.Minute)
	if v, ok := s.get("a", now.Add(59*time.Second)); !ok || !v {
		t.Errorf("an answer was not kept for its lifetime: %v %v", v, ok)
	}
	if _, ok := s.get("a", now.Add(time.Minute)); ok {
		t.Error("an answer was kept past its lifetime")
	}
	for i := range maxReviews + 10 {
		s.put(fmt.Sprint(i), true, now, time.Minute)
	}
	if len(s.items) != maxReviews {
		t.Errorf("%d answers kept, want at most %d", len(s.items), maxReviews)
	}
	// Once they have expired, a new answer takes their place.
	s.put("late", true, now.Add(2*time.Minute), time.Minute)
	if _, ok := s.get("late", now.Add(2*time.Minute)); !ok || len(s.items) != 1 {
		t.Errorf("expired answers were not dropped for a new one: %d kept", len(s.items))
	}
}

// TestMetricsAuthFilter runs the metrics endpoint's filter against a real API server:
// no token and an invalid token get 401, a valid token of a user without the right to
// get /metrics 403, and one with it 200.
func TestMetricsAuthFilter(t *testing.T) {
	cfg, err := envtestenv.Config()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := kubernetes.NewForConfigOrDie(cfg)
	ns := fmt.Sprintf("metrics-%d", time.Now().UnixNano()%1e9)
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	check(t, err)
	_, err = cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ns + "-reader"},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}, metav1.CreateOptions{})
	check(t, err)
	_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-scraper"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ns + "-reader"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "scraper"}}}, metav1.CreateOptions{})
	check(t, err)
	token := func(name string) string {
		t.Helper()
		_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		check(t, err)
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		check(t, err)
		return tr.Status.Token
	}
	scraper, stranger := token("scraper"), token("stranger")
	// The binding reaches the API server's authorizer after a moment; the filter keeps
	// a refusal for 30 s, so ask first without it.
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		r, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "system:serviceaccount:" + ns + ":scraper", NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"}}},
			metav1.CreateOptions{})
		return err == nil && r.Status.Allowed, nil
	})
	check(t, err)

	hc, err := rest.HTTPClientFor(cfg)
	check(t, err)
	filter, err := MetricsAuthFilter(cfg, hc)
	check(t, err)
	h, err := filter(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("metrics")) }))
	check(t, err)
	for _, tc := range []struct {
		name, header string
		want         int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"a token the API server does not know", "Bearer not-a-token", http.StatusUnauthorized},
		{"a service account without the role", "Bearer " + stranger, http.StatusForbidden},
		{"a service account with the role", "Bearer " + scraper, http.StatusOK},
		{"the same token again", "Bearer " + scraper, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Errorf("GET /metrics: %d %q, want %d", rec.Code, rec.Body.String(), tc.want)
			}
		})
	}
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

package operator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// The metrics endpoint's check of its clients. A request is served when the API server
// says its bearer token is valid (a TokenReview) and that the token's user may get the
// path (a SubjectAccessReview of a non-resource URL: the chart's metrics-reader
// ClusterRole grants get on /metrics). This is what controller-runtime's
// filters.WithAuthenticationAndAuthorization does, with the same cache lifetimes, but
// with two typed clients instead of k8s.io/apiserver's delegating authenticator and
// authorizer: that library brings gRPC, CEL, OpenTelemetry and the API server's own
// packages into every binary, and their start-up alone kept about 17 MiB of each
// process resident (docs/scale.md).

// Lifetimes of the answers kept, as controller-runtime's filter keeps them.
const (
	tokenTTL   = time.Minute
	allowTTL   = 5 * time.Minute
	denyTTL    = 30 * time.Second
	reviewWait = 10 * time.Second
	// maxReviews caps the answers kept of each kind: a client that sends a new token
	// each time costs a review each time, and no memory beyond this.
	maxReviews = 1024
)

// MetricsAuthFilter is the FilterProvider of the metrics endpoint (MetricsOptions).
func MetricsAuthFilter(cfg *rest.Config, hc *http.Client) (metricsserver.Filter, error) {
	authn, err := authenticationclient.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("client of TokenReviews: %w", err)
	}
	authz, err := authorizationclient.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("client of SubjectAccessReviews: %w", err)
	}
	a := &metricsAuth{
		tokens: authn.TokenReviews(), access: authz.SubjectAccessReviews(), now: time.Now,
		users: newAnswers[tokenAnswer](), grants: newAnswers[bool](),
	}
	return a.filter, nil
}

// metricsAuth holds the review clients and the answers kept.
type metricsAuth struct {
	tokens authenticationclient.TokenReviewInterface
	access authorizationclient.SubjectAccessReviewInterface
	now    func() time.Time
	users  *answers[tokenAnswer]
	grants *answers[bool]
}

// tokenAnswer is the API server's answer about a token: its user when authenticated.
type tokenAnswer struct {
	user          authenticationv1.UserInfo
	authenticated bool
}

func (a *metricsAuth) filter(log logr.Logger, next http.Handler) (http.Handler, error) {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		token, ok := bearerToken(req.Header.Get("Authorization"))
		if !ok {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		ctx, cancel := context.WithTimeout(req.Context(), reviewWait)
		defer cancel()
		who, err := a.authenticate(ctx, token)
		if err != nil {
			log.Error(err, "Authentication failed")
			http.Error(w, "Authentication failed", http.StatusInternalServerError)
			return
		}
		if !who.authenticated {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		verb := strings.ToLower(req.Method)
		allowed, err := a.authorize(ctx, who.user, verb, req.URL.Path)
		if err != nil {
			log.Error(err, "Authorization failed", "user", who.user.Username)
			http.Error(w, "Authorization for user "+who.user.Username+" failed", http.StatusInternalServerError)
			return
		}
		if !allowed {
			log.V(4).Info("Authorization denied", "user", who.user.Username, "verb", verb, "path", req.URL.Path)
			http.Error(w, "Authorization denied for user "+who.user.Username, http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, req)
	}), nil
}

// bearerToken reads "Bearer <token>" (the scheme in any case), as the API server does.
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "bearer") || token == "" {
		return "", false
	}
	return token, true
}

// authenticate asks the API server who the token is, or answers from what it said in
// the last tokenTTL. The token is kept only as its hash.
func (a *metricsAuth) authenticate(ctx context.Context, token string) (tokenAnswer, error) {
	sum := sha256.Sum256([]byte(token))
	key := hex.EncodeToString(sum[:])
	if ans, ok := a.users.get(key, a.now()); ok {
		return ans, nil
	}
	review, err := a.tokens.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return tokenAnswer{}, fmt.Errorf("review token: %w", err)
	}
	ans := tokenAnswer{user: review.Status.User, authenticated: review.Status.Authenticated}
	a.users.put(key, ans, a.now(), tokenTTL)
	return ans, nil
}

// authorize asks the API server whether the user may use verb on path, or answers from
// what it said in the last allowTTL (denyTTL for a refusal).
func (a *metricsAuth) authorize(ctx context.Context, u authenticationv1.UserInfo, verb, path string) (bool, error) {
	key := strings.Join([]string{u.Username, u.UID, strings.Join(u.Groups, ","), fmt.Sprint(u.Extra), verb, path}, "\x00")
	if allowed, ok := a.grants.get(key, a.now()); ok {
		return allowed, nil
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: u.Username, UID: u.UID, Groups: u.Groups, Extra: map[string]authorizationv1.ExtraValue{},
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
	}}
	for k, v := range u.Extra {
		sar.Spec.Extra[k] = authorizationv1.ExtraValue(v)
	}
	review, err := a.access.Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("review access of %s to %s %s: %w", u.Username, verb, path, err)
	}
	ttl := denyTTL
	if review.Status.Allowed {
		ttl = allowTTL
	}
	a.grants.put(key, review.Status.Allowed, a.now(), ttl)
	return review.Status.Allowed, nil
}

// answers keeps at most maxReviews answers, each until its expiry.
type answers[V any] struct {
	mu    sync.Mutex
	items map[string]answer[V]
}

type answer[V any] struct {
	value   V
	expires time.Time
}

func newAnswers[V any]() *answers[V] { return &answers[V]{items: map[string]answer[V]{}} }

func (s *answers[V]) get(key string, now time.Time) (V, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.items[key]
	if !ok || !now.Before(a.expires) {
		var zero V
		return zero, false
	}
	return a.value, true
}

// put keeps an answer for ttl from now; when maxReviews are kept, the expired ones go
// first, and when none has expired the answer is not kept.
func (s *answers[V]) put(key string, v V, now time.Time, ttl time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.items[key]; !ok && len(s.items) >= maxReviews {
		for k, a := range s.items {
			if !now.Before(a.expires) {
				delete(s.items, k)
			}
		}
		if len(s.items) >= maxReviews {
			return
		}
	}
	s.items[key] = answer[V]{value: v, expires: now.Add(ttl)}
}

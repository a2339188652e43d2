package framework

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PollInterval is how often the wait helpers look again.
var PollInterval = 200 * time.Millisecond

// TimeoutError is a wait that did not see its condition in time. Detail is the last
// state seen, so the message says what was wrong, not only that time ran out.
type TimeoutError struct {
	What    string
	Timeout time.Duration
	Detail  string
}

func (e *TimeoutError) Error() string {
	msg := fmt.Sprintf("timed out after %s waiting for %s", e.Timeout, e.What)
	if e.Detail != "" {
		msg += "; last seen: " + e.Detail
	}
	return msg
}

// Until calls check every PollInterval until it reports done, or timeout passes, or ctx
// ends. check returns a description of the state it saw (used in the timeout message);
// an error from check is retried too (the API server may blip) and reported as the state.
func Until(ctx context.Context, timeout time.Duration, what string, check func(ctx context.Context) (done bool, detail string, err error)) error {
	deadline := time.Now().Add(timeout)
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	detail := ""
	for {
		done, d, err := check(ctx)
		if done {
			return nil
		}
		switch {
		case err != nil && ctx.Err() == nil:
			detail = "error: " + err.Error()
		case d != "":
			detail = d
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) && !time.Now().Before(deadline) {
				return &TimeoutError{What: what, Timeout: timeout, Detail: detail}
			}
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(PollInterval):
		}
	}
}

// objectName is "Kind namespace/name" for messages.
func objectName(c client.Client, obj client.Object) string {
	kind := fmt.Sprintf("%T", obj)
	if gvk, err := c.GroupVersionKindFor(obj); err == nil {
		kind = gvk.Kind
	}
	if obj.GetNamespace() == "" {
		return kind + " " + obj.GetName()
	}
	return kind + " " + obj.GetNamespace() + "/" + obj.GetName()
}

// WaitFor gets obj (by its name and namespace) until cond holds, and leaves the last
// version read in obj. cond returns whether it holds and a description of what it saw.
// what completes "waiting for <Kind ns/name> to ...", e.g. "become Ready".
func WaitFor[T client.Object](ctx context.Context, c client.Client, obj T, timeout time.Duration, what string, cond func(T) (bool, string)) error {
	key := client.ObjectKeyFromObject(obj)
	desc := objectName(c, obj) + " to " + what
	return Until(ctx, timeout, desc, func(ctx context.Context) (bool, string, error) {
		if err := c.Get(ctx, key, obj); err != nil {
			if apierrors.IsNotFound(err) {
				return false, "not found", nil
			}
			return false, "", err
		}
		ok, detail := cond(obj)
		return ok, detail, nil
	})
}

// WaitForList lists into list (with opts) until cond holds; list keeps the last result.
func WaitForList[L client.ObjectList](ctx context.Context, c client.Client, list L, timeout time.Duration, what string, cond func(L) (bool, string), opts ...client.ListOption) error {
	return Until(ctx, timeout, what, func(ctx context.Context) (bool, string, error) {
		if err := c.List(ctx, list, opts...); err != nil {
			return false, "", err
		}
		ok, detail := cond(list)
		return ok, detail, nil
	})
}

// WaitForDeletion waits until obj is gone from the API.
func WaitForDeletion(ctx context.Context, c client.Client, obj client.Object, timeout time.Duration) error {
	key := client.ObjectKeyFromObject(obj)
	desc := objectName(c, obj) + " to be deleted"
	return Until(ctx, timeout, desc, func(ctx context.Context) (bool, string, error) {
		err := c.Get(ctx, key, obj)
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		if err != nil {
			return false, "", err
		}
		if ts := obj.GetDeletionTimestamp(); ts != nil {
			return false, fmt.Sprintf("terminating since %s, finalizers %v", ts.Format(time.TimeOnly), obj.GetFinalizers()), nil
		}
		return false, "present, not being deleted", nil
	})
}

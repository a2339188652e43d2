package valkey

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/rueidis"
)

// ACLOp is one command of an ACL transaction: ACL SETUSER Name Rules... when
// Delete is false, ACL DELUSER Name otherwise.
type ACLOp struct {
	Name   string
	Rules  []string
	Delete bool
}

// args returns the command line of the operation.
func (op ACLOp) args() []string {
	if op.Delete {
		return []string{"ACL", "DELUSER", op.Name}
	}
	return append([]string{"ACL", "SETUSER", op.Name}, op.Rules...)
}

// ErrTransactionAborted is wrapped by ACLTransaction's error when the server
// refused to queue a command (EXECABORT): nothing of the transaction ran.
var ErrTransactionAborted = errors.New("transaction aborted")

// ACLTransaction runs ops in one MULTI/EXEC: the server runs them one after
// the other with no command of another client in between, so no client ever
// sees a state between two of them. The result holds one error per op, in
// order (nil when the op succeeded). Note that EXEC does not roll back: an op
// refused while running (for example ACL SETUSER with an unknown command) is
// reported in its slot and the other ops still take effect; callers that need
// all or nothing check the rules first (for example on a scratch user in an
// earlier transaction). Password rules are removed from every message.
func (c *Client) ACLTransaction(ctx context.Context, ops []ACLOp) ([]error, error) {
	if len(ops) == 0 {
		return nil, nil
	}
	var secrets []string
	cmds := make(rueidis.Commands, 0, len(ops)+2)
	cmds = append(cmds, c.rc.B().Multi().Build())
	for _, op := range ops {
		if op.Name == "" {
			return nil, fmt.Errorf("acl transaction: empty user name: %w", ErrInvalidArgument)
		}
		secrets = append(secrets, aclSecrets(op.Rules)...)
		cmds = append(cmds, c.rc.B().Arbitrary(op.args()...).Build())
	}
	cmds = append(cmds, c.rc.B().Exec().Build())

	ctx, cancel := c.withTimeout(ctx, 0)
	defer cancel()
	c.begin(ctx)
	resps := c.rc.DoMulti(ctx, cmds...)
	exec := resps[len(resps)-1]
	if err := exec.Error(); err != nil {
		return nil, fmt.Errorf("acl transaction: %w", queueError(resps, err, secrets))
	}
	msg, err := exec.ToMessage()
	if err != nil {
		return nil, fmt.Errorf("acl transaction: %w", asServerError(err, secrets...))
	}
	replies, err := msg.ToArray()
	if err != nil {
		return nil, fmt.Errorf("acl transaction: EXEC reply: %w", err)
	}
	if len(replies) != len(ops) {
		return nil, fmt.Errorf("acl transaction: EXEC returned %d replies for %d commands", len(replies), len(ops))
	}
	out := make([]error, len(ops))
	for i := range replies {
		if err := replies[i].Error(); err != nil {
			out[i] = fmt.Errorf("%s %s: %w", strings.ToLower(strings.Join(ops[i].args()[:2], " ")), ops[i].Name, asServerError(err, secrets...))
		}
	}
	return out, nil
}

// queueError explains a failed EXEC: the first refused command when the
// server refused to queue one (EXECABORT), or the EXEC error itself.
func queueError(resps []rueidis.RedisResult, execErr error, secrets []string) error {
	for _, r := range resps[:len(resps)-1] {
		if err := r.Error(); err != nil {
			return fmt.Errorf("%w: %w", ErrTransactionAborted, asServerError(err, secrets...))
		}
	}
	if re, ok := rueidis.IsRedisErr(execErr); ok && strings.HasPrefix(re.Error(), "EXECABORT") {
		return fmt.Errorf("%w: %w", ErrTransactionAborted, asServerError(execErr, secrets...))
	}
	return asServerError(execErr, secrets...)
}

// ACLUsers returns the names of the server's users (ACL USERS).
func (c *Client) ACLUsers(ctx context.Context) ([]string, error) {
	v, err := c.value(ctx, "ACL", "USERS")
	if err != nil {
		return nil, fmt.Errorf("acl users: %w", err)
	}
	names, err := stringList(v)
	if err != nil {
		return nil, fmt.Errorf("acl users: %w", err)
	}
	return names, nil
}

package valkey

import (
	"errors"
	"strings"

	"github.com/redis/rueidis"

	"github.com/valkey-operator/valkey-operator/valkeyconf/redact"
)

// ErrNoSuchUser is returned by ACLGetUser when the server has no such user.
var ErrNoSuchUser = errors.New("no such ACL user")

// ErrInvalidArgument is wrapped by the errors of methods that refuse their
// input before sending anything to the server.
var ErrInvalidArgument = errors.New("invalid argument")

// ServerError is an error reply of the Valkey server, as opposed to a network
// or timeout error. Its message is the server's text (the client library drops
// a leading "ERR "), with any secret sent in the command replaced.
type ServerError struct {
	msg string
}

// Error returns the server's message.
func (e *ServerError) Error() string { return e.msg }

// Message returns the server's message, suitable for a status condition.
func (e *ServerError) Message() string { return e.msg }

// IsServerError reports whether err (or any error it wraps) is an error reply
// of the server.
func IsServerError(err error) bool {
	var se *ServerError
	return errors.As(err, &se)
}

// IsClusterDown reports whether err is a server's CLUSTERDOWN reply, or a MIGRATE
// that failed because its target replied so: a server that does not see the cluster
// ok (all slots covered by primaries it reaches) refuses commands on keys.
func IsClusterDown(err error) bool {
	msg, ok := ServerMessage(err)
	return ok && strings.Contains(msg, "CLUSTERDOWN")
}

// ServerMessage returns the server's message held in err, if err wraps a
// *ServerError.
func ServerMessage(err error) (string, bool) {
	var se *ServerError
	if errors.As(err, &se) {
		return se.msg, true
	}
	return "", false
}

// asServerError turns an error reply of rueidis into a *ServerError, removing
// every non-empty secret and whatever redact.Text recognises as one (a password
// an ACL SETUSER error quotes) from the message. Other errors pass unchanged.
func asServerError(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	re, ok := rueidis.IsRedisErr(err)
	if !ok {
		return err
	}
	return &ServerError{msg: redact.Text(re.Error(), secrets...)}
}

package cliflags

import (
	"errors"
	"fmt"
)

// PasswordEnv is the environment variable the tools (kvnode cql, kvnode bench) read the
// password of --username from when --password is not given: unlike a flag, it is not in the
// process list.
const PasswordEnv = "KVNODE_PASSWORD"

// Credentials returns the username and password a tool logs in with: the password of --password
// when it was given (passwordSet), else envPassword (PasswordEnv's value). A username needs a
// password, and a password a username.
func Credentials(username, password string, passwordSet bool, envPassword string) (string, string, error) {
	if !passwordSet {
		password = envPassword
	}
	switch {
	case username == "" && passwordSet:
		return "", "", errors.New("--password needs --username")
	case username != "" && password == "":
		return "", "", fmt.Errorf("--username %s needs a password: set %s (or --password, which other users can see in the process list)", username, PasswordEnv)
	case username == "":
		return "", "", nil
	}
	return username, password, nil
}

package webhook

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// The Standard Webhooks test vector, from the reference libraries' tests
// (libraries/go/webhook_test.go TestWebhookSign in
// github.com/standard-webhooks/standard-webhooks).
const (
	vectorSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorTimestamp = 1614265330
	vectorPayload   = `{"test": 2432232314}`
	vectorSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func TestSign(t *testing.T) {
	// Expected values for the raw forms computed apart, with
	//   printf 'msg_1.1700000000.{"a":1}' | openssl dgst -sha256 -hmac KEY -binary | base64
	tests := []struct {
		name, secret, id string
		ts               int64
		body, want       string
	}{
		{"matches the Standard Webhooks test vector", vectorSecret, vectorID, vectorTimestamp, vectorPayload, vectorSignature},
		{"a secret without whsec_ is its own key", "s3cret", "msg_1", 1700000000, `{"a":1}`, "v1,JTnXZsicQmbYBUKbG0PXd2OqV6VmCFiMTEvW8yxopSo="},
		{"a whsec_ secret keys with its decoded bytes", "whsec_czNjcmV0", "msg_1", 1700000000, `{"a":1}`, "v1,JTnXZsicQmbYBUKbG0PXd2OqV6VmCFiMTEvW8yxopSo="},
		{"a raw secret keys with its UTF-8 bytes", "clé secrète", "msg_1", 1700000000, `{"a":1}`, "v1,XcvDYRS0PCk+x9iysVDbSNxjFJqz7CuTDh1z/4YRyS0="},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Sign(tt.secret, tt.id, time.Unix(tt.ts, 999_000_000), []byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Sign = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestSignRefusesUnusableSecrets(t *testing.T) {
	tests := []struct {
		name, secret, phrase string
	}{
		{"whsec_ with invalid base64", "whsec_not base64!", "has the whsec_ prefix but the rest is not valid base64"},
		{"whsec_ with unpadded base64", "whsec_czNjcmV0MQ", "has the whsec_ prefix but the rest is not valid base64"},
		{"whsec_ with nothing after it", "whsec_", "has nothing after the whsec_ prefix"},
		{"empty secret", "", "must not be empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Sign(tt.secret, "msg_1", time.Unix(0, 0), nil)
			if !errors.Is(err, ErrInvalidSecret) || err.Error() != tt.phrase {
				t.Errorf("Sign error = %v, want %q matching ErrInvalidSecret", err, tt.phrase)
			}
			if cerr := CheckSecret(tt.secret); cerr == nil || cerr.Error() != err.Error() {
				t.Errorf("CheckSecret = %v, want the error Sign gives", cerr)
			}
			if rest := strings.TrimPrefix(tt.secret, SecretPrefix); rest != "" && strings.Contains(err.Error(), rest) {
				t.Errorf("error %q quotes the secret", err)
			}
		})
	}
}

func TestCheckSecretAcceptsBothForms(t *testing.T) {
	for _, s := range []string{vectorSecret, "s3cret", "whsec_czNjcmV0", "whsec"} {
		if err := CheckSecret(s); err != nil {
			t.Errorf("CheckSecret(%q) = %v, want nil", s, err)
		}
	}
}

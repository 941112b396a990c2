package seal

import (
	"context"
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"
)

// KMSAPI is the part of the AWS KMS client (*kms.Client) that the KMS
// Sealer uses.
type KMSAPI interface {
	GenerateDataKey(ctx context.Context, in *kms.GenerateDataKeyInput, optFns ...func(*kms.Options)) (*kms.GenerateDataKeyOutput, error)
	Decrypt(ctx context.Context, in *kms.DecryptInput, optFns ...func(*kms.Options)) (*kms.DecryptOutput, error)
}

// Defaults for the KMS Sealer.
const (
	// dataKeyMaxAge is how long one data key seals new values, so that no
	// data key is used forever by a long-lived instance.
	dataKeyMaxAge = 24 * time.Hour
	// dataKeyMaxSeals is how many values one data key seals, far below
	// the ~2^32 that random GCM nonces allow.
	dataKeyMaxSeals = 1 << 20
	// dataKeyCacheSize is how many unwrapped data keys Open keeps, so that
	// opening values sealed under a recent data key costs no KMS call.
	dataKeyCacheSize = 64
)

// encryptionContext is sent with every KMS call. KMS binds it to the wrapped
// data key, so a data key wrapped for another purpose under the same KMS
// key does not unwrap here, and it appears in CloudTrail.
var encryptionContext = map[string]string{"purpose": "letagents-seal"}

// NewKMS returns a Sealer using envelope encryption under the KMS key keyID
// (a key ID, key ARN, alias name or alias ARN).
//
// The first Seal asks KMS for an AES-256 data key (GenerateDataKey); later
// Seals reuse it until it is 24 hours old or has sealed 2^20 values, then
// ask for a new one. Each sealed value carries its data key wrapped by KMS.
// Open unwraps it with KMS Decrypt unless the same wrapped key is among the
// 64 most recently seen. So a
// Lambda instance typically makes one GenerateDataKey call and a few
// Decrypt calls in its life. The plaintext data keys live only in memory.
//
// Errors from KMS are wrapped and do not match ErrCorrupt, except KMS's own
// verdict that a wrapped key is invalid or belongs to another KMS key,
// which does.
func NewKMS(client KMSAPI, keyID string) Sealer {
	return &kmsSealer{
		client:    client,
		keyID:     keyID,
		now:       time.Now,
		maxAge:    dataKeyMaxAge,
		maxSeals:  dataKeyMaxSeals,
		cacheSize: dataKeyCacheSize,
		cache:     make(map[string]cipher.AEAD),
		unwrap:    make(map[string]*call),
	}
}

// kmsSealer is the Sealer from NewKMS (format 0x02).
type kmsSealer struct {
	client KMSAPI
	keyID  string

	// Limits, settable by tests.
	now       func() time.Time
	maxAge    time.Duration
	maxSeals  int
	cacheSize int

	mu sync.Mutex
	// cur seals new values; nil before the first Seal.
	cur *dataKey
	// generate is the GenerateDataKey call in flight, if any: Seals that
	// need a new data key wait for it instead of asking KMS again.
	generate *call
	// cache maps wrapped data keys to their unwrapped AEAD; order holds the
	// same keys oldest first, to evict.
	cache map[string]cipher.AEAD
	order []string
	// unwrap holds the Decrypt calls in flight, by wrapped data key.
	unwrap map[string]*call
}

// dataKey is a data key that seals new values.
type dataKey struct {
	aead    cipher.AEAD
	header  []byte // 0x02 | length | wrapped key
	created time.Time
	seals   int // values sealed so far; guarded by kmsSealer.mu
}

// call is a KMS call in flight that other goroutines may wait for.
type call struct {
	done chan struct{}
	err  error
	// retry is set when the call failed because its caller's context
	// ended: waiters with live contexts try again themselves rather than
	// inherit someone else's cancellation.
	retry bool
}

func newCall() *call { return &call{done: make(chan struct{})} }

// finish records the outcome of c and wakes its waiters.
func (c *call) finish(ctx context.Context, err error) {
	c.err = err
	c.retry = err != nil && ctx.Err() != nil
	close(c.done)
}

// wait blocks until c finishes or ctx ends. A nil error means the caller
// should look again for the result (the call succeeded, or failed for a
// reason private to its caller).
func (c *call) wait(ctx context.Context) error {
	select {
	case <-c.done:
		if c.retry {
			return nil
		}
		return c.err
	case <-ctx.Done():
		return fmt.Errorf("seal: wait for kms: %w", context.Cause(ctx))
	}
}

// Seal implements Sealer.
func (s *kmsSealer) Seal(ctx context.Context, plaintext, aad []byte) ([]byte, error) {
	k, err := s.sealingKey(ctx)
	if err != nil {
		return nil, err
	}
	return sealWith(k.aead, k.header, plaintext, aad), nil
}

// sealingKey returns the data key for one new value, counting the seal
// against it, and asks KMS for a new one when there is none or the
// current one is used up. At most one GenerateDataKey call is in flight.
func (s *kmsSealer) sealingKey(ctx context.Context) (*dataKey, error) {
	for {
		s.mu.Lock()
		if k := s.cur; k != nil && k.seals < s.maxSeals && s.now().Sub(k.created) < s.maxAge {
			k.seals++
			s.mu.Unlock()
			return k, nil
		}
		if c := s.generate; c != nil {
			s.mu.Unlock()
			if err := c.wait(ctx); err != nil {
				return nil, err
			}
			continue
		}
		c := newCall()
		s.generate = c
		s.mu.Unlock()

		k, err := s.generateDataKey(ctx)

		s.mu.Lock()
		s.generate = nil
		if err == nil {
			// The caller that generated the key takes the first seal, so
			// it makes progress even with a tiny maxSeals.
			k.seals = 1
			s.cur = k
			s.remember(string(k.header[3:]), k.aead)
		}
		s.mu.Unlock()
		c.finish(ctx, err)
		if err != nil {
			return nil, err
		}
		return k, nil
	}
}

// generateDataKey asks KMS for a new data key.
func (s *kmsSealer) generateDataKey(ctx context.Context) (*dataKey, error) {
	out, err := s.client.GenerateDataKey(ctx, &kms.GenerateDataKeyInput{
		KeyId:             &s.keyID,
		KeySpec:           types.DataKeySpecAes256,
		EncryptionContext: encryptionContext,
	})
	if err != nil {
		return nil, fmt.Errorf("seal: kms generate data key: %w", err)
	}
	defer clear(out.Plaintext)
	wrapped := out.CiphertextBlob
	if len(wrapped) == 0 || len(wrapped) > math.MaxUint16 {
		return nil, fmt.Errorf("seal: kms generate data key: wrapped key is %d bytes, want 1 to %d", len(wrapped), math.MaxUint16)
	}
	aead, err := newAEAD(out.Plaintext)
	if err != nil {
		return nil, fmt.Errorf("seal: kms generate data key: %w", err)
	}
	header := make([]byte, 3, 3+len(wrapped))
	header[0] = versionKMS
	binary.BigEndian.PutUint16(header[1:3], uint16(len(wrapped)))
	header = append(header, wrapped...)
	return &dataKey{aead: aead, header: header, created: s.now()}, nil
}

// Open implements Sealer.
func (s *kmsSealer) Open(ctx context.Context, sealed, aad []byte) ([]byte, error) {
	header, wrapped, body, err := splitKMS(sealed)
	if err != nil {
		return nil, err
	}
	aead, err := s.openingKey(ctx, wrapped)
	if err != nil {
		return nil, err
	}
	return openWith(aead, header, body, aad)
}

// splitKMS splits a 0x02 value into its header, the wrapped data key within
// the header, and the body (nonce | ciphertext | tag).
func splitKMS(sealed []byte) (header, wrapped, body []byte, err error) {
	if len(sealed) < 3 {
		return nil, nil, nil, fmt.Errorf("%w: %d bytes is too short", ErrCorrupt, len(sealed))
	}
	if sealed[0] != versionKMS {
		return nil, nil, nil, fmt.Errorf("%w: version byte %#02x, want %#02x", ErrCorrupt, sealed[0], versionKMS)
	}
	n := int(binary.BigEndian.Uint16(sealed[1:3]))
	if n == 0 || len(sealed) < 3+n+nonceSize+tagSize {
		return nil, nil, nil, fmt.Errorf("%w: %d bytes is too short for a %d-byte wrapped key", ErrCorrupt, len(sealed), n)
	}
	return sealed[:3+n], sealed[3 : 3+n], sealed[3+n:], nil
}

// openingKey returns the AEAD for a wrapped data key, from the cache or by
// asking KMS. At most one Decrypt call per wrapped key is in flight.
func (s *kmsSealer) openingKey(ctx context.Context, wrapped []byte) (cipher.AEAD, error) {
	id := string(wrapped)
	for {
		s.mu.Lock()
		if aead, ok := s.cache[id]; ok {
			s.mu.Unlock()
			return aead, nil
		}
		if c, ok := s.unwrap[id]; ok {
			s.mu.Unlock()
			if err := c.wait(ctx); err != nil {
				return nil, err
			}
			continue
		}
		c := newCall()
		s.unwrap[id] = c
		s.mu.Unlock()

		aead, err := s.decryptDataKey(ctx, wrapped)

		s.mu.Lock()
		delete(s.unwrap, id)
		if err == nil {
			s.remember(id, aead)
		}
		s.mu.Unlock()
		c.finish(ctx, err)
		return aead, err
	}
}

// decryptDataKey asks KMS to unwrap a data key.
func (s *kmsSealer) decryptDataKey(ctx context.Context, wrapped []byte) (cipher.AEAD, error) {
	out, err := s.client.Decrypt(ctx, &kms.DecryptInput{
		CiphertextBlob:    wrapped,
		KeyId:             &s.keyID,
		EncryptionContext: encryptionContext,
	})
	if err != nil {
		var invalid *types.InvalidCiphertextException
		var incorrect *types.IncorrectKeyException
		if errors.As(err, &invalid) || errors.As(err, &incorrect) {
			// KMS itself says the wrapped key is not one of ours: the
			// value is corrupt, not the service unavailable.
			return nil, fmt.Errorf("%w: kms decrypt: %w", ErrCorrupt, err)
		}
		return nil, fmt.Errorf("seal: kms decrypt: %w", err)
	}
	defer clear(out.Plaintext)
	if len(out.Plaintext) != keySize {
		// A valid KMS ciphertext with our encryption context, but not an
		// AES-256 data key.
		return nil, fmt.Errorf("%w: kms decrypt: data key is %d bytes, want %d", ErrCorrupt, len(out.Plaintext), keySize)
	}
	return newAEAD(out.Plaintext)
}

// remember caches aead under the wrapped key id, evicting the oldest entry
// when full. s.mu must be held.
func (s *kmsSealer) remember(id string, aead cipher.AEAD) {
	if _, ok := s.cache[id]; ok {
		return
	}
	for len(s.order) >= s.cacheSize && len(s.order) > 0 {
		delete(s.cache, s.order[0])
		s.order[0] = ""
		s.order = s.order[1:]
	}
	s.cache[id] = aead
	s.order = append(s.order, id)
}

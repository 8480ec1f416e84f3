package standalone

import (
	"context"
	"errors"
	"testing"
)

func TestRetryRetriesOnlyTheFlappingError(t *testing.T) {
	calls := 0
	err := Retry(context.Background(), func() error {
		calls++
		if calls < 3 {
			return errors.New("server error: PersistenceError: Not enough non-faulty bookies available error code: -6")
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("err %v after %d calls, want nil after 3", err, calls)
	}
	boom := errors.New("boom")
	calls = 0
	if err := Retry(context.Background(), func() error { calls++; return boom }); !errors.Is(err, boom) || calls != 1 {
		t.Fatalf("err %v after %d calls, want boom after 1", err, calls)
	}
}

func TestRetryWhileRetriesWhatItIsTold(t *testing.T) {
	timeout, boom := errors.New("send timeout"), errors.New("boom")
	passing := func(err error) bool { return errors.Is(err, timeout) || Flapping(err) }
	calls := 0
	err := RetryWhile(context.Background(), func() error {
		calls++
		switch calls {
		case 1:
			return timeout
		case 2:
			return errors.New("Not enough non-faulty bookies available")
		case 3:
			return boom
		}
		return nil
	}, passing)
	if !errors.Is(err, boom) || calls != 3 {
		t.Fatalf("err %v after %d calls, want boom after 3", err, calls)
	}
}

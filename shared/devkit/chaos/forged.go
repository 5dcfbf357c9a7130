package chaos

// Forged messages. After the first rounds' drains, while no exporter runs,
// the driver puts on a queue of its own messages daybook cannot act on: jobs
// and slices with invented claim tokens, slices with a real plan's token but
// another generation or a slice beyond the plan, bodies with a duplicated
// or case-variant key, messages for an account that does not exist, a
// restatement check of a generation never committed. It delivers them to
// the exporters as the event source mapping would, then checks that every
// one of them reached the dead-letter queue with a reason (none silently
// dropped, none left to come back) and that none changed anything: every
// object of every bucket keeps its ETag and time, every ledger row its
// state and update time.

import (
	"context"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/partition"
)

// forgedRounds is how many rounds inject forged messages after their drain.
const forgedRounds = 2

// forgery is one forged message and what it tries.
type forgery struct {
	what, body string
}

// forge sends a batch of forged messages through the exporters and checks
// what they did.
func (p *pipeline) forge(ctx context.Context, round int) error {
	fs, err := p.forgeries(ctx)
	if err != nil || len(fs) == 0 {
		return err
	}
	if p.forgedURL == "" {
		name := fmt.Sprintf("chaos-forged-%d", p.o.Seed)
		out, err := p.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: &name})
		if err != nil {
			return fmt.Errorf("forged messages' queue: %w", err)
		}
		p.forgedURL = aws.ToString(out.QueueUrl)
	}
	before, err := p.world(ctx)
	if err != nil {
		return err
	}
	for _, f := range fs {
		if err := p.sendTo(ctx, p.forgedURL, f.body); err != nil {
			return err
		}
	}
	if _, err := p.drainQueue(ctx, p.forgedURL, 0); err != nil {
		return err
	}
	after, err := p.world(ctx)
	if err != nil {
		return err
	}
	for _, d := range before.diff(after) {
		p.problem("round %d: forged messages changed %s", round, d)
	}
	dead, err := p.takeDeadLetters(ctx)
	if err != nil {
		return err
	}
	for _, f := range fs {
		reason, ok := dead[f.body]
		switch {
		case !ok:
			p.problem("round %d: forged message (%s) was dropped, not dead-lettered: %s", round, f.what, f.body)
		case reason == "":
			p.problem("round %d: forged message (%s) reached the dead-letter queue without a reason", round, f.what)
		}
		if ok {
			p.rep.ForgedDeadLettered++
		}
		delete(dead, f.body)
	}
	for body, reason := range dead {
		if reason != "" { // the exporter refused a real message
			p.problem("round %d: a real message was dead-lettered (%s): %s", round, reason, body)
			continue
		}
		p.rep.Redriven++ // SQS moved it after maxReceiveCount deliveries
	}
	p.rep.Forged += len(fs)
	p.logf("round %d: %d forged messages dead-lettered, nothing changed", round, len(fs))
	return nil
}

// forgeries builds the batch from what the ledger holds now.
func (p *pipeline) forgeries(ctx context.Context) ([]forgery, error) {
	rows, err := p.rows(ctx)
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	r := rows[p.rng.IntN(len(rows))]
	other := p.accounts[len(p.accounts)-1].ID
	stranger := p.strangerID()
	k, day := r.Key, r.Day.String()
	enc := func(what string, v any) forgery {
		b, err := jobs.Encode(v)
		if err != nil {
			panic(err)
		}
		return forgery{what, b}
	}
	job := jobs.Job{Kind: jobs.KindJob, AccountID: k.AccountID, Dataset: k.Dataset, Day: day, ClaimToken: p.hex(16), Attempt: 1, Generation: r.Generation + 1, Reason: "scheduled"}
	sl := jobs.Slice{Kind: jobs.KindSlice, AccountID: k.AccountID, Dataset: k.Dataset, Day: day, ClaimToken: p.hex(16), Generation: r.Generation + 1, Slice: 0, Slices: 2}
	strangerJob, strangerSlice := job, sl
	strangerJob.AccountID, strangerSlice.AccountID = stranger, stranger
	fs := []forgery{
		enc("job with an invented claim token", job),
		enc("slice with an invented claim token", sl),
		enc("job for an unknown account", strangerJob),
		enc("slice for an unknown account", strangerSlice),
		enc("restatement check for an unknown account", jobs.RestateCheck{Kind: jobs.KindRestateCheck, AccountID: stranger, Dataset: k.Dataset, Day: day, Generation: 1}),
		enc("restatement check of a generation never committed", jobs.RestateCheck{Kind: jobs.KindRestateCheck, AccountID: k.AccountID, Dataset: k.Dataset, Day: day, Generation: r.Generation + 3}),
		enc("reseed completion for an unknown account", jobs.ReseedDone{Kind: jobs.KindReseedDone, AccountID: stranger, Dataset: "profiles", Epoch: 1}),
		{"manual request with a duplicated account_id", fmt.Sprintf(`{"kind":"manual","account_id":%q,"dataset":%q,"day":%q,"account_id":%q,"requested_by":"chaos-%s"}`,
			k.AccountID, k.Dataset, day, other, p.hex(4))},
		{"manual request with a case-variant ACCOUNT_ID", fmt.Sprintf(`{"kind":"manual","account_id":%q,"ACCOUNT_ID":%q,"dataset":%q,"day":%q,"requested_by":"chaos-%s"}`,
			k.AccountID, other, k.Dataset, day, p.hex(4))},
	}
	if p.big != nil {
		plan, err := p.led.Slices().PlanOf(ctx, *p.big)
		switch {
		case err == nil:
			real := jobs.Slice{Kind: jobs.KindSlice, AccountID: plan.AccountID, Dataset: plan.Dataset, Day: plan.Day.String(), ClaimToken: plan.Token,
				Generation: plan.Generation, Slice: 0, Slices: plan.Slices}
			gen, beyond := real, real
			gen.Generation++
			beyond.Slice, beyond.Slices = plan.Slices, plan.Slices+1
			fs = append(fs, enc("slice of the real plan with another generation", gen), enc("slice beyond the real plan", beyond))
		case !strings.Contains(err.Error(), "no slice plan"):
			return nil, err
		}
	}
	return fs, nil
}

// strangerID is an account id of the right form that no account has.
func (p *pipeline) strangerID() string {
	const base32 = "abcdefghijklmnopqrstuvwxyz234567"
	for {
		b := []byte("acct_")
		for range 16 {
			b = append(b, base32[p.rng.IntN(len(base32))])
		}
		if p.account(string(b)).ID == "" {
			return string(b)
		}
	}
}

// hex is n random bytes of the run's seed, in hex.
func (p *pipeline) hex(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(p.rng.UintN(256))
	}
	return hex.EncodeToString(b)
}

// takeDeadLetters empties the dead-letter queue: body -> daybook_error
// (empty for a message SQS moved there after its receive count).
func (p *pipeline) takeDeadLetters(ctx context.Context) (map[string]string, error) {
	got := map[string]string{}
	for {
		out, err := p.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &p.dlqURL, MaxNumberOfMessages: 10,
			MessageAttributeNames: []string{"All"}, VisibilityTimeout: 600})
		if err != nil {
			return nil, fmt.Errorf("receive the dead letters: %w", err)
		}
		if len(out.Messages) == 0 {
			return got, nil
		}
		for _, m := range out.Messages {
			reason := ""
			if a, ok := m.MessageAttributes["daybook_error"]; ok {
				reason = aws.ToString(a.StringValue)
			}
			if prev := got[aws.ToString(m.Body)]; prev == "" {
				got[aws.ToString(m.Body)] = reason
			}
			if _, err := p.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &p.dlqURL, ReceiptHandle: m.ReceiptHandle}); err != nil {
				return nil, err
			}
		}
	}
}

// world is what a message could change: every object of every account's
// bucket and every partition row.
type world struct {
	objects map[string]string // bucket/key -> ETag and time
	rows    map[partition.Key]string
}

func (p *pipeline) world(ctx context.Context) (world, error) {
	w := world{objects: map[string]string{}, rows: map[partition.Key]string{}}
	seen := map[string]bool{}
	for _, a := range p.accounts {
		b := a.Destination.Bucket
		if seen[b] {
			continue
		}
		seen[b] = true
		objs, err := p.objects(ctx, b, nil)
		if err != nil {
			return w, err
		}
		for k, v := range objs {
			w.objects[b+"/"+k] = v
		}
	}
	rows, err := p.rows(ctx)
	if err != nil {
		return w, err
	}
	for _, r := range rows {
		w.rows[r.Key] = fmt.Sprintf("%s updated %s lease %s attempts %d generation %d", r.State, r.UpdatedAt.Format(time.RFC3339), r.LeaseUntil.Format(time.RFC3339), r.Attempts, r.Generation)
	}
	return w, nil
}

// diff says what changed from w to after.
func (w world) diff(after world) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(w.objects)) {
		if v, ok := after.objects[k]; !ok {
			out = append(out, "s3://"+k+" (deleted)")
		} else if v != w.objects[k] {
			out = append(out, "s3://"+k+" (rewritten)")
		}
	}
	for _, k := range slices.Sorted(maps.Keys(after.objects)) {
		if _, ok := w.objects[k]; !ok {
			out = append(out, "s3://"+k+" (written)")
		}
	}
	for k, v := range after.rows {
		if w.rows[k] != v {
			out = append(out, fmt.Sprintf("ledger row %s: %q, was %q", k, v, w.rows[k]))
		}
	}
	return out
}

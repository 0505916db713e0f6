package api

import (
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"

	docjobsv1 "github.com/docjobs/docjobs/gen/docjobs/v1"
	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/outbound"
	"github.com/docjobs/docjobs/internal/schema"
	"github.com/docjobs/docjobs/internal/webhook"
)

// Bounds on create requests. The spec fixes the idempotency key and dedupeBy
// bounds; the others keep a hostile request from costing more than a real
// one ever needs.
const (
	// MaxSourceURLs is the most sourceUrls one job takes; docjobs bench
	// refuses more files before it starts the service.
	MaxSourceURLs      = 100
	maxURLBytes        = 2048
	maxPrompts         = 16
	maxPromptBytes     = 64 << 10
	maxTitleChars      = 1024
	maxMetadataPairs   = 64
	maxMetadataKey     = 128
	maxMetadataValue   = 2048
	maxDedupeBy        = 32
	maxDedupeNameBytes = 256
	maxIdempotencyKey  = 255
	maxModelBytes      = 256
	maxSecretBytes     = 4096
	// minChunkBudget: below it a chunk holds a few words, and a document
	// costs a model call for every few words of it (at 1, one per
	// character), each carrying the whole prompt.
	minChunkBudget = 100
)

// createRules are the deployment facts validation depends on.
type createRules struct {
	publicURL    *url.URL // recognizes our own upload URLs
	allowPrivate bool     // DOCJOBS_ALLOW_PRIVATE_URLS
	// keyRequired says which provider slots need a key (Config.KeyRequired);
	// nil checks none.
	keyRequired func(slot string) bool
}

// uploadRef is a source URL that names a file stored by this service; the
// caller must check that it belongs to the calling account.
type uploadRef struct {
	index int
	id    string
}

// invalid is the error of a request field: InvalidArgument with a message
// that starts with the field's name, as the caller wrote it.
func invalid(field, format string, args ...any) error {
	return status.Error(codes.InvalidArgument, field+": "+fmt.Sprintf(format, args...))
}

// validateCreate checks a create request without any I/O and returns the
// sources that are our own stored files. It reports the first problem in
// field order, so the same request always gets the same message.
func validateCreate(req *docjobsv1.CreateJobRequest, rules createRules) ([]uploadRef, error) {
	uploads, err := validateSources(req.GetSourceUrls(), rules)
	if err != nil {
		return nil, err
	}
	if err := validatePrompts(req.GetPrompts()); err != nil {
		return nil, err
	}
	if err := validateNeural(req.GetNeural(), len(req.GetPrompts()) > 0, rules.keyRequired); err != nil {
		return nil, err
	}
	if err := validateOCR(req.GetOcr()); err != nil {
		return nil, err
	}
	if err := checkEnum("extractionMode", req.GetExtractionMode()); err != nil {
		return nil, err
	}
	if s := req.GetResponseSchema(); s != "" {
		if err := schema.Check(s); err != nil {
			return nil, invalid("responseSchema", "%s", err)
		}
	}
	if err := validateMerge(req.GetMerge()); err != nil {
		return nil, err
	}
	// An unknown mode number is treated like an unknown mode name (spec rule
	// 5): consensus is off, so it needs no schema.
	if consensusMode(req.GetConsensus()) != docjobsv1.ConsensusMode_CONSENSUS_MODE_UNSPECIFIED && req.GetResponseSchema() == "" {
		return nil, invalid("consensus.mode", "requires responseSchema")
	}
	if n := utf8.RuneCountInString(req.GetTitle()); n > maxTitleChars {
		return nil, invalid("title", "at most %d characters", maxTitleChars)
	}
	if err := checkText("title", req.GetTitle()); err != nil {
		return nil, err
	}
	if err := validateMetadata(req.GetMetadata()); err != nil {
		return nil, err
	}
	if u := req.GetWebhookUrl(); u != "" {
		if problem := checkURL(u, rules.allowPrivate); problem != "" {
			return nil, invalid("webhookUrl", "%s", problem)
		}
	}
	if len(req.GetWebhookSecret()) > maxSecretBytes {
		return nil, invalid("webhookSecret", "at most %d bytes", maxSecretBytes)
	}
	if sec := req.GetWebhookSecret(); sec != "" {
		if err := webhook.CheckSecret(sec); err != nil {
			return nil, invalid("webhookSecret", "%v", err)
		}
	}
	if n := utf8.RuneCountInString(req.GetIdempotencyKey()); n > maxIdempotencyKey {
		return nil, invalid("idempotencyKey", "at most %d characters", maxIdempotencyKey)
	}
	if err := checkText("idempotencyKey", req.GetIdempotencyKey()); err != nil {
		return nil, err
	}
	return uploads, nil
}

func validateSources(urls []string, rules createRules) ([]uploadRef, error) {
	if len(urls) == 0 {
		return nil, invalid("sourceUrls", "required")
	}
	if len(urls) > MaxSourceURLs {
		return nil, invalid("sourceUrls", "at most %d URLs", MaxSourceURLs)
	}
	var uploads []uploadRef
	for i, raw := range urls {
		field := "sourceUrls[" + strconv.Itoa(i) + "]"
		if id, ok := parseFileURL(rules.publicURL, raw); ok {
			// Our own upload: read from storage, never fetched, so the
			// private-address rule does not apply to the public URL's host.
			uploads = append(uploads, uploadRef{index: i, id: id})
			continue
		}
		if problem := checkURL(raw, rules.allowPrivate); problem != "" {
			return nil, invalid(field, "%s", problem)
		}
	}
	return uploads, nil
}

func validatePrompts(prompts []string) error {
	if len(prompts) > maxPrompts {
		return invalid("prompts", "at most %d prompts", maxPrompts)
	}
	for i, p := range prompts {
		field := "prompts[" + strconv.Itoa(i) + "]"
		if len(p) > maxPromptBytes {
			return invalid(field, "at most %d bytes", maxPromptBytes)
		}
		// A blank first prompt would pay for a model call per chunk with no
		// instruction; "no prompt" is an empty list.
		if strings.TrimSpace(p) == "" {
			return invalid(field, "must not be empty (omit prompts to skip the model)")
		}
		if err := checkText(field, p); err != nil {
			return err
		}
	}
	return nil
}

// validateNeural requires the object always (spec: required even when
// prompts is empty) and the provider and model only when the model will run.
func validateNeural(n *docjobsv1.Neural, hasPrompts bool, keyRequired func(slot string) bool) error {
	if n == nil {
		return invalid("neural", "required")
	}
	if err := checkEnum("neural.type", n.GetType()); err != nil {
		return err
	}
	if hasPrompts && n.GetType() == docjobsv1.NeuralClientType_NEURAL_CLIENT_TYPE_UNSPECIFIED {
		return invalid("neural.type", "required when prompts are given")
	}
	if len(n.GetModel()) > maxModelBytes {
		return invalid("neural.model", "at most %d bytes", maxModelBytes)
	}
	if err := checkText("neural.model", n.GetModel()); err != nil {
		return err
	}
	if hasPrompts && strings.TrimSpace(n.GetModel()) == "" {
		return invalid("neural.model", "required when prompts are given")
	}
	if len(n.GetApiKey()) > maxSecretBytes {
		return invalid("neural.apiKey", "at most %d bytes", maxSecretBytes)
	}
	if err := checkHeaderValue("neural.apiKey", n.GetApiKey()); err != nil {
		return err
	}
	if t := n.GetType().String(); hasPrompts && strings.TrimSpace(n.GetApiKey()) == "" && keyRequired != nil && keyRequired(t) {
		return invalid("neural.apiKey", "required when prompts are given for %s", t)
	}
	if b := n.GetChunkBudgetTokens(); b < 0 {
		return invalid("neural.chunkBudgetTokens", "must not be negative")
	} else if b > 0 && b < minChunkBudget {
		return invalid("neural.chunkBudgetTokens", "at least %d (0 means the default of %d)", minChunkBudget, job.DefaultChunkBudgetTokens)
	}
	return nil
}

func validateOCR(o *docjobsv1.Ocr) error {
	if o == nil {
		return invalid("ocr", "required")
	}
	if o.GetProvider() == docjobsv1.NeuralClientType_NEURAL_CLIENT_TYPE_UNSPECIFIED {
		return invalid("ocr.provider", "required")
	}
	if err := checkEnum("ocr.provider", o.GetProvider()); err != nil {
		return err
	}
	if strings.TrimSpace(o.GetModel()) == "" {
		return invalid("ocr.model", "required")
	}
	if len(o.GetModel()) > maxModelBytes {
		return invalid("ocr.model", "at most %d bytes", maxModelBytes)
	}
	if err := checkText("ocr.model", o.GetModel()); err != nil {
		return err
	}
	if strings.TrimSpace(o.GetProviderKey()) == "" {
		return invalid("ocr.providerKey", "required")
	}
	if len(o.GetProviderKey()) > maxSecretBytes {
		return invalid("ocr.providerKey", "at most %d bytes", maxSecretBytes)
	}
	if err := checkHeaderValue("ocr.providerKey", o.GetProviderKey()); err != nil {
		return err
	}
	return nil
}

func validateMerge(m *docjobsv1.MergeOptions) error {
	if m == nil {
		return nil
	}
	// The spec ignores every other merge.* field while merge is off, but
	// rejects more than 32 dedupeBy names at creation whatever the switch.
	if !m.GetEnabled() {
		if len(m.GetDedupeBy()) > maxDedupeBy {
			return invalid("merge.dedupeBy", "at most %d names", maxDedupeBy)
		}
		return nil
	}
	if err := checkEnum("merge.scope", m.GetScope()); err != nil {
		return err
	}
	if err := checkEnum("merge.conflictPolicy", m.GetConflictPolicy()); err != nil {
		return err
	}
	if err := checkEnum("merge.format", m.GetFormat()); err != nil {
		return err
	}
	if len(m.GetDedupeBy()) > maxDedupeBy {
		return invalid("merge.dedupeBy", "at most %d names", maxDedupeBy)
	}
	for i, name := range m.GetDedupeBy() {
		field := "merge.dedupeBy[" + strconv.Itoa(i) + "]"
		if strings.TrimSpace(name) == "" {
			return invalid(field, "must not be empty")
		}
		if len(name) > maxDedupeNameBytes {
			return invalid(field, "at most %d bytes", maxDedupeNameBytes)
		}
		if err := checkText(field, name); err != nil {
			return err
		}
	}
	return nil
}

func validateMetadata(md map[string]string) error {
	if len(md) > maxMetadataPairs {
		return invalid("metadata", "at most %d pairs", maxMetadataPairs)
	}
	// Sorted, so that a request with several bad pairs always names the same one.
	keys := make([]string, 0, len(md))
	for k := range md {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if len(k) > maxMetadataKey {
			return invalid("metadata", "key %q… longer than %d bytes", truncateUTF8(k, 32), maxMetadataKey)
		}
		if problem := textProblem(k); problem != "" {
			return invalid("metadata", "key %q: %s", truncateUTF8(k, 32), problem)
		}
		if len(md[k]) > maxMetadataValue {
			return invalid("metadata["+strconv.Quote(k)+"]", "at most %d bytes", maxMetadataValue)
		}
		if err := checkText("metadata["+strconv.Quote(k)+"]", md[k]); err != nil {
			return err
		}
	}
	return nil
}

// checkText refuses, in a request field of free text, what PostgreSQL
// cannot store in a TEXT column: NUL, and bytes that are not UTF-8 (the
// JSON decoder and gRPC's codec refuse those before; the check keeps the
// rule whole for any other caller). Stored, the store would replace them
// (sqlstore.storable), and the job would not echo what the client sent;
// refused, both databases answer alike.
//
// It also refuses the other C0 control characters but tab, line feed and
// carriage return: no prompt, title or label needs them, and JSON writes
// each as six bytes (\u0001), so a request the field caps allow over gRPC
// became six times larger as JSON: too large for REST's body limit, and a
// job that a list page bounded in protobuf bytes echoed at 6 MB.
func checkText(field, s string) error {
	if problem := textProblem(s); problem != "" {
		return invalid(field, "%s", problem)
	}
	return nil
}

// textProblem is what checkText finds wrong with s, or "".
func textProblem(s string) string {
	for i := range len(s) {
		switch c := s[i]; {
		case c == 0:
			return "must not contain NUL characters"
		case c < 0x20 && c != '\t' && c != '\n' && c != '\r':
			return fmt.Sprintf("must not contain control characters other than tab, line feed and carriage return (U+%04X)", c)
		}
	}
	if !utf8.ValidString(s) {
		return "must be valid UTF-8"
	}
	return ""
}

// checkHeaderValue refuses a provider key that cannot be sent in an HTTP
// header, where every provider takes it: RFC 9110's field-value holds
// visible characters, SP, HTAB and bytes from 0x80 (obs-text), so any other
// control character (CR, LF, NUL, DEL, …) is refused. Stored, such a key
// fails every call before it leaves the process. The key is not echoed.
func checkHeaderValue(field, s string) error {
	for i := range len(s) {
		if c := s[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return invalid(field, "must not contain control characters")
		}
	}
	return nil
}

// enumValue is any generated enum type.
type enumValue interface {
	Number() protoreflect.EnumNumber
	Descriptor() protoreflect.EnumDescriptor
}

// checkEnum rejects a number the enum does not define, naming the values
// it takes. Unknown names never get here (the REST edge drops them, or
// refuses ocr.provider's); unknown numbers do, over gRPC and as JSON
// numbers.
func checkEnum(field string, v enumValue) error {
	if v.Descriptor().Values().ByNumber(v.Number()) == nil {
		return invalid(field, "unknown value %d; %s", v.Number(), EnumChoices(v.Descriptor()))
	}
	return nil
}

// UnknownEnumName is the message for a name ed does not define, given as
// the value of an enum field: what was given, the name meant when it is a
// value's name without the enum's prefix or in another case ("OCR_ALWAYS",
// "provider_1"), and the names ed takes. The CLI takes those short
// spellings, and the JSON API did not say it does not: it reported
// "ocr.provider: required", or ran an extractionMode of OCR_ALWAYS as the
// account's default (audit-readme F3).
func UnknownEnumName(ed protoreflect.EnumDescriptor, given string) string {
	msg := fmt.Sprintf("unknown value %q", given)
	if meant := enumNameMeant(ed, given); meant != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", meant)
	}
	return msg + "; " + EnumChoices(ed)
}

// enumNameMeant is the name of ed that given spells without the prefix
// every name of ed shares, or in another case; "" when there is none.
func enumNameMeant(ed protoreflect.EnumDescriptor, given string) string {
	upper := strings.ToUpper(strings.TrimSpace(given))
	for _, name := range []string{upper, enumPrefix(ed) + upper} {
		if v := ed.Values().ByName(protoreflect.Name(name)); v != nil && v.Number() != 0 {
			return name
		}
	}
	return ""
}

// enumPrefix is the start every value name of ed shares, up to its last
// underscore: EXTRACTION_MODE_ of ExtractionMode.
func enumPrefix(ed protoreflect.EnumDescriptor) string {
	values := ed.Values()
	if values.Len() == 0 {
		return ""
	}
	prefix := string(values.Get(0).Name())
	for i := 1; i < values.Len(); i++ {
		name := string(values.Get(i).Name())
		n := 0
		for n < len(prefix) && n < len(name) && prefix[n] == name[n] {
			n++
		}
		prefix = prefix[:n]
	}
	return prefix[:strings.LastIndexByte(prefix, '_')+1]
}

// EnumChoices names the values an enum field takes, for a message: the
// zero value is left out (it means "not given", as leaving the field out
// does), a run of names that differ only by a trailing number is given as
// a range, and aliases (a second name of a number) follow.
func EnumChoices(ed protoreflect.EnumDescriptor) string {
	var names, aliases []string
	seen := map[protoreflect.EnumNumber]bool{}
	values := ed.Values()
	for i := range values.Len() {
		v := values.Get(i)
		switch {
		case v.Number() == 0:
		case seen[v.Number()]:
			aliases = append(aliases, string(v.Name()))
		default:
			names = append(names, string(v.Name()))
		}
		seen[v.Number()] = true
	}
	msg := "use " + orList(numberedRuns(names))
	if len(aliases) > 0 {
		msg += " (or an alias: " + strings.Join(aliases, ", ") + ")"
	}
	return msg
}

// numberedRuns gives three or more names in a row that are one stem and
// the numbers n, n+1, … as "STEM_n to STEM_m".
func numberedRuns(names []string) []string {
	split := func(name string) (string, int, bool) {
		i := strings.LastIndexFunc(name, func(r rune) bool { return r < '0' || r > '9' })
		n, err := strconv.Atoi(name[i+1:])
		return name[:i+1], n, err == nil
	}
	var out []string
	for i := 0; i < len(names); {
		stem, first, ok := split(names[i])
		j := i + 1
		for ok && j < len(names) {
			s, n, ok2 := split(names[j])
			if !ok2 || s != stem || n != first+(j-i) {
				break
			}
			j++
		}
		if j-i >= 3 {
			out = append(out, names[i]+" to "+names[j-1])
		} else {
			out = append(out, names[i:j]...)
		}
		i = j
	}
	return out
}

// orList joins items as "a, b or c".
func orList(items []string) string {
	if len(items) <= 1 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// consensusMode is the mode in effect: an unknown number counts as off.
func consensusMode(c *docjobsv1.ConsensusOptions) docjobsv1.ConsensusMode {
	m := c.GetMode()
	if m.Descriptor().Values().ByNumber(m.Number()) == nil {
		return docjobsv1.ConsensusMode_CONSENSUS_MODE_UNSPECIFIED
	}
	return m
}

// checkURL returns what is wrong with a URL the service will call, or "".
func checkURL(raw string, allowPrivate bool) string {
	const notHTTP = "must be an absolute http or https URL"
	if len(raw) > maxURLBytes {
		return fmt.Sprintf("at most %d bytes", maxURLBytes)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Opaque != "" || u.Hostname() == "" {
		return notHTTP
	}
	// url.Parse takes any digits as a port; one no dial can reach would
	// only fail the file (or retry the webhook for a day) after the create
	// said yes. An empty port ("host:") is the scheme's default.
	if !outbound.PortInRange(u.Port()) {
		return "must have a port from 1 to 65535"
	}
	// URLs are stored, echoed and logged as given, so a password in one
	// would be a secret kept and returned in clear.
	if u.User != nil {
		return "must not contain credentials (user:password@)"
	}
	if numericHost(u.Hostname()) {
		return "a host ending in a number must be an IPv4 address written a.b.c.d"
	}
	if !allowPrivate && privateHost(u.Hostname()) {
		return "must not point to a private or local address"
	}
	return ""
}

// numericHost reports a host whose last label is a number (decimal, or
// hex after 0x) but which is no address netip reads: 2130706433, 0x7f.1,
// 127.1, 0177.0.0.1, 127.000.000.001. Browsers' URL parsers and C's
// inet_aton read such a host as an IPv4 address, Go's resolver looks it up
// as a name, and no DNS name ends in a number (top-level domains are not
// numeric): the create said yes to a URL whose download could only fail,
// and the address it meant, loopback or not, was never checked.
func numericHost(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	last := h[strings.LastIndexByte(h, '.')+1:]
	digits := "0123456789"
	if hex, ok := strings.CutPrefix(last, "0x"); ok {
		last, digits = hex, "0123456789abcdef"
	}
	if strings.Trim(last, digits) != "" {
		return false
	}
	_, err := netip.ParseAddr(h)
	return err != nil
}

// nonPublic are IPv4 ranges a public service has no business calling that
// the netip predicates do not cover.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),     // "this network"
	netip.MustParsePrefix("100.64.0.0/10"), // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),  // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"), // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),   // reserved, and broadcast
}

// nat64 embeds an IPv4 address in its last 32 bits.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// privateHost reports a host that is a literal non-public address or a
// localhost name. It is the early, friendly half of the rule: names that
// resolve to private addresses are refused when the connection is dialed.
func privateHost(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	addr, err := netip.ParseAddr(h)
	if err != nil {
		return false
	}
	addr = addr.Unmap().WithZone("")
	if nat64.Contains(addr) {
		b := addr.As16()
		addr = netip.AddrFrom4([4]byte(b[12:]))
	}
	if !addr.IsGlobalUnicast() || addr.IsPrivate() || addr.IsLoopback() || addr.IsLinkLocalUnicast() {
		return true
	}
	for _, p := range nonPublic {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

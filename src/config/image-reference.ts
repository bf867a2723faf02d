// Container image references as the kubelet parses them (github.com/distribution/reference, regexp.go, reference.go
// and normalize.go ParseNormalizedNamed): a guard image that does not parse leaves its Pod in InvalidImageName, and
// the hook never starts. The grammar is reference.go's: name[:tag][@digest].
const alphanumeric = '[a-z0-9]+';
const separator = '(?:[._]|__|[-]+)';
const pathComponent = `${alphanumeric}(?:${separator}${alphanumeric})*`;
const remoteName = `${pathComponent}(?:/${pathComponent})*`;
const domainNameComponent = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const domainName = `${domainNameComponent}(?:\\.${domainNameComponent})*`;
const host = `(?:${domainName}|\\[(?:[a-fA-F0-9:]+)\\])`;
const domainAndPort = `${host}(?::[0-9]+)?`;
const name = `(?:${domainAndPort}/)?${remoteName}`;
const tag = '[\\w][\\w.-]{0,127}';
const digest = '[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}';
const REFERENCE = new RegExp(`^(${name})(?::${tag})?(?:@(${digest}))?$`);
const IDENTIFIER = /^[a-f0-9]{64}$/;
// reference.go NameTotalLengthMax.
const NAME_TOTAL_LENGTH_MAX = 255;
// github.com/opencontainers/go-digest: the algorithms it knows, and the length of their hex encoding.
const DIGEST_HEX_LENGTHS: Readonly<Record<string, number>> = { sha256: 64, sha384: 96, sha512: 128 };

/** Why the kubelet would refuse `reference` as an image; undefined when it parses. */
export function imageReferenceProblem(reference: string): string | undefined {
  if (IDENTIFIER.test(reference)) return 'is a 64-character hex identifier, not an image name';
  const match = REFERENCE.exec(reference);
  if (!match) return `"${reference}" is not an image reference like registry.example/busybox:1.37.0@sha256:<64 hex>`;
  const [, imageName = '', imageDigest] = match;
  if (imageName.length > NAME_TOTAL_LENGTH_MAX) return `its name is longer than ${NAME_TOTAL_LENGTH_MAX} characters`;
  if (imageDigest !== undefined) {
    const [algorithm = '', hex = ''] = imageDigest.split(':');
    const length = DIGEST_HEX_LENGTHS[algorithm];
    if (length === undefined) return `digest algorithm "${algorithm}" is not one of sha256, sha384, sha512`;
    if (!new RegExp(`^[a-f0-9]{${length}}$`).test(hex))
      return `a ${algorithm} digest is ${length} lowercase hex digits`;
  }
  return undefined;
}

// Kubernetes resource quantities ("100m", "64Mi", "1.5", "12e6"), read exactly as the API server reads them:
// kubernetes/apimachinery v0.36.2 pkg/api/resource/quantity.go (parseQuantityString, ParseQuantity) and suffix.go
// (newSuffixer, interpret). A value is kept in nano-units (10^-9) as a bigint, rounded up to the next nano-unit as
// ParseQuantity rounds ("rounds non-zero values up to the minimum representable value").

const DECIMAL_SUFFIXES: Readonly<Record<string, number>> = {
  n: -9,
  u: -6,
  m: -3,
  '': 0,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};
const BINARY_SUFFIXES: Readonly<Record<string, number>> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };

// parseQuantityString's grammar: a sign, digits with at most one point, then suffix characters, an optional sign
// and exponent digits ("1.G" is accepted as Go accepts it).
const QUANTITY = /^([+-]?)(\d*)(?:\.(\d*))?([eEinumkKMGTP]*(?:[-+]?\d+)?)$/;

const NANO_DIGITS = 9;

/** Both non-negative. */
function ceilDiv(numerator: bigint, denominator: bigint): bigint {
  return (numerator + denominator - 1n) / denominator;
}

/** A quantity in nano-units; undefined when the API server would refuse the text. */
export function parseQuantity(text: string): bigint | undefined {
  const match = text === '' ? null : QUANTITY.exec(text);
  if (!match) return undefined;
  // Go reads a missing number as 0: "+", "." and ".5" parse.
  const [, sign = '', whole = '', fraction = '', suffix = ''] = match;
  const digits = BigInt(`${whole}${fraction}` || '0');
  let nano: bigint;
  const decimal = DECIMAL_SUFFIXES[suffix];
  const binary = BINARY_SUFFIXES[suffix];
  let exponent: number | undefined = decimal;
  if (exponent === undefined && binary === undefined && /^[eE][-+]?\d+$/.test(suffix))
    exponent = Number(suffix.slice(1));
  if (binary !== undefined) {
    nano = ceilDiv(digits * (1n << BigInt(binary)) * 10n ** BigInt(NANO_DIGITS), 10n ** BigInt(fraction.length));
  } else if (exponent !== undefined) {
    const scale = exponent + NANO_DIGITS - fraction.length;
    nano = scale >= 0 ? digits * 10n ** BigInt(scale) : ceilDiv(digits, 10n ** BigInt(-scale));
  } else {
    return undefined;
  }
  return sign === '-' ? -nano : nano;
}

/** ceil(q * 1000), what LimitRanger compares (Quantity.MilliValue: "ceil(q / 10^scale)"). */
export function milliValue(nano: bigint): bigint {
  return nano < 0n ? -(-nano / 1_000_000n) : ceilDiv(nano, 1_000_000n);
}

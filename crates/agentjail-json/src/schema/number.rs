//! Exact decimal numbers for schema keywords.
//!
//! A JSON number is compared, tested for integer-ness and for `multipleOf` on its literal
//! digits, never through f64: through f64, an odd integer above 2^64 passed `multipleOf 2`,
//! `1e-400` passed `const 0` and `9007199254740993.0` passed `maximum 9007199254740992`.
//!
//! Every operation here is cheap whatever the exponent: comparisons look at the exponent of
//! the leading digit first and then at the digit strings; `multipleOf` reduces modulo the
//! divisor's digits, raising 10 to the exponent with modular exponentiation, so `1e1000`
//! never expands into a thousand-digit number.

use num_bigint::BigUint;
use num_traits::Zero;
use serde_json::Number;
use std::cmp::Ordering;

/// Number literals longer than this are not evaluated (the strict reader allows 256).
pub const MAX_LITERAL_CHARS: usize = 4096;

/// `(-1)^neg × digits × 10^exp`, normalised: `digits` has no leading or trailing zeros,
/// and zero is `digits == ""`, `exp == 0`, `neg == false`. Equal numbers are equal structs,
/// so `1`, `1.0` and `10e-1` compare equal as JSON Schema requires.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Decimal {
    neg: bool,
    digits: String,
    exp: i64,
}

impl Decimal {
    /// Parse a JSON number literal; `None` when it is not one or is longer than
    /// [`MAX_LITERAL_CHARS`].
    pub fn parse(text: &str) -> Option<Decimal> {
        if text.len() > MAX_LITERAL_CHARS {
            return None;
        }
        let (neg, rest) = match text.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, text),
        };
        let (mantissa, exp_text) = match rest.find(['e', 'E']) {
            Some(i) => (rest.get(..i)?, Some(rest.get(i + 1..)?)),
            None => (rest, None),
        };
        let (int, frac) = match mantissa.find('.') {
            Some(i) => (mantissa.get(..i)?, mantissa.get(i + 1..)?),
            None => (mantissa, ""),
        };
        if int.is_empty() || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
            return None;
        }
        let mut exp: i64 = 0;
        if let Some(e) = exp_text {
            let (eneg, edigits) = match e.as_bytes().first() {
                Some(b'-') => (true, e.get(1..)?),
                Some(b'+') => (false, e.get(1..)?),
                _ => (false, e),
            };
            if edigits.is_empty() || !edigits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            for b in edigits.bytes() {
                exp = exp.saturating_mul(10).saturating_add(i64::from(b - b'0'));
            }
            if eneg {
                exp = -exp;
            }
        }
        let digits: String = int.chars().chain(frac.chars()).collect();
        exp = exp.saturating_sub(frac.len() as i64);
        Some(Decimal::normalise(neg, &digits, exp))
    }

    fn normalise(neg: bool, digits: &str, exp: i64) -> Decimal {
        let trimmed = digits.trim_end_matches('0');
        let trailing = digits.len() - trimmed.len();
        let body = trimmed.trim_start_matches('0');
        if body.is_empty() {
            return Decimal {
                neg: false,
                digits: String::new(),
                exp: 0,
            };
        }
        Decimal {
            neg,
            digits: body.to_string(),
            exp: exp.saturating_add(trailing as i64),
        }
    }

    pub fn from_number(n: &Number) -> Option<Decimal> {
        Decimal::parse(&n.to_string())
    }

    pub fn is_zero(&self) -> bool {
        self.digits.is_empty()
    }

    pub fn is_negative(&self) -> bool {
        self.neg
    }

    /// Zero fractional part, decided exactly.
    pub fn is_integer(&self) -> bool {
        self.is_zero() || self.exp >= 0
    }

    /// The value as a u64 when it is a non-negative integer, saturating at `u64::MAX` (a
    /// bound of 1e300 means "no bound" as much as u64::MAX does).
    pub fn to_u64_saturating(&self) -> Option<u64> {
        if self.neg || !self.is_integer() {
            return None;
        }
        if self.is_zero() {
            return Some(0);
        }
        if self.leading() >= 20 {
            return Some(u64::MAX);
        }
        // At most 20 significant digits here: fits a u128.
        let mut v: u128 = self.digits.parse().ok()?;
        for _ in 0..self.exp {
            v = v.saturating_mul(10);
        }
        Some(u64::try_from(v).unwrap_or(u64::MAX))
    }

    /// The power of ten of the leading digit (magnitude order).
    fn leading(&self) -> i64 {
        self.exp.saturating_add(self.digits.len() as i64 - 1)
    }

    /// |self| vs |other|.
    fn cmp_abs(&self, other: &Decimal) -> Ordering {
        match (self.is_zero(), other.is_zero()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Less,
            (false, true) => return Ordering::Greater,
            _ => {}
        }
        // Same leading power: digit strings compare lexicographically ("12" < "123", as
        // neither has trailing zeros).
        self.leading()
            .cmp(&other.leading())
            .then_with(|| self.digits.as_str().cmp(other.digits.as_str()))
    }

    /// `self` is an integer multiple of `divisor` (which must be > 0).
    pub fn is_multiple_of(&self, divisor: &Decimal) -> bool {
        if self.is_zero() {
            return true;
        }
        if divisor.is_zero() {
            return false;
        }
        // self = X·10^a, divisor = M·10^b, neither X nor M divisible by 10.
        // a < b: X·10^a / (M·10^b) needs 10^(b-a) | X, impossible without a factor 10.
        if self.exp < divisor.exp {
            return false;
        }
        let (Some(x), Some(m)) = (
            BigUint::parse_bytes(self.digits.as_bytes(), 10),
            BigUint::parse_bytes(divisor.digits.as_bytes(), 10),
        ) else {
            return false;
        };
        // X·10^(a-b) mod M, with 10^(a-b) reduced by modular exponentiation.
        let shift = BigUint::from(self.exp.abs_diff(divisor.exp));
        let pow = BigUint::from(10u32).modpow(&shift, &m);
        ((x % &m) * pow % &m).is_zero()
    }
}

/// Plain notation for ordinary magnitudes, scientific beyond (messages only).
impl std::fmt::Display for Decimal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_zero() {
            return f.write_str("0");
        }
        let sign = if self.neg { "-" } else { "" };
        let len = self.digits.len() as i64;
        if (0..=20).contains(&self.exp) {
            let zeros = "0".repeat(self.exp as usize);
            return write!(f, "{sign}{}{zeros}", self.digits);
        }
        if self.exp < 0 && self.exp >= -30 {
            let point = len + self.exp;
            if point > 0 {
                let (int, frac) = self.digits.split_at(point as usize);
                return write!(f, "{sign}{int}.{frac}");
            }
            let zeros = "0".repeat((-point) as usize);
            return write!(f, "{sign}0.{zeros}{}", self.digits);
        }
        let (first, rest) = self.digits.split_at(1);
        let dot = if rest.is_empty() { "" } else { "." };
        write!(f, "{sign}{first}{dot}{rest}e{}", self.leading())
    }
}

impl Ord for Decimal {
    fn cmp(&self, other: &Decimal) -> Ordering {
        match (self.neg, other.neg) {
            (false, true) => Ordering::Greater,
            (true, false) => Ordering::Less,
            (false, false) => self.cmp_abs(other),
            (true, true) => other.cmp_abs(self),
        }
    }
}

impl PartialOrd for Decimal {
    fn partial_cmp(&self, other: &Decimal) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        Decimal::parse(s).unwrap()
    }

    #[test]
    fn equality_is_numeric() {
        assert_eq!(d("1"), d("1.0"));
        assert_eq!(d("1"), d("10e-1"));
        assert_eq!(d("100"), d("1e2"));
        assert_eq!(d("0"), d("-0.000e5"));
        assert_ne!(d("1e-400"), d("0"));
        assert_ne!(d("9007199254740993"), d("9007199254740992"));
    }

    #[test]
    fn ordering_is_exact() {
        assert!(d("9007199254740993.0") > d("9007199254740992"));
        assert!(d("-1") < d("0"));
        assert!(d("-2") < d("-1.5"));
        assert!(d("1e-400") > d("0"));
        assert!(d("-1e-400") < d("0"));
        assert!(d("0.12") < d("0.123"));
        assert!(d("12") < d("1.3e1"));
        assert!(d("1e1000") > d("9".repeat(999).as_str()));
        assert!(d("1e99999999999999999999999") > d("1e1000"));
    }

    #[test]
    fn integers_and_multiples() {
        assert!(d("1.0").is_integer());
        assert!(d("1e2").is_integer());
        assert!(!d("1.5").is_integer());
        assert!(!d("1e-400").is_integer());
        let big_odd = "36893488147419103233"; // 2^65 + 1
        assert!(!d(big_odd).is_multiple_of(&d("2")));
        assert!(d("36893488147419103232").is_multiple_of(&d("2")));
        assert!(d("0.3").is_multiple_of(&d("0.1")));
        assert!(d("0.75").is_multiple_of(&d("0.25")));
        assert!(!d("0.3").is_multiple_of(&d("0.2")));
        assert!(
            d("1e1000").is_multiple_of(&d("7e-3").clone()) == d("1e1003").is_multiple_of(&d("7"))
        );
        assert!(!d("1e1000").is_multiple_of(&d("7")));
        assert!(d("7e1000").is_multiple_of(&d("7")));
        assert!(d("1e99999999999999999").is_multiple_of(&d("8")));
        assert!(!d("0.01").is_multiple_of(&d("0.1e1")));
        assert!(d("0").is_multiple_of(&d("3")));
    }

    #[test]
    fn unsigned_conversion_saturates() {
        assert_eq!(d("0").to_u64_saturating(), Some(0));
        assert_eq!(d("3.0").to_u64_saturating(), Some(3));
        assert_eq!(d("12e2").to_u64_saturating(), Some(1200));
        assert_eq!(d("1e300").to_u64_saturating(), Some(u64::MAX));
        assert_eq!(
            d("18446744073709551616").to_u64_saturating(),
            Some(u64::MAX)
        );
        assert_eq!(d("-1").to_u64_saturating(), None);
        assert_eq!(d("1.5").to_u64_saturating(), None);
    }

    #[test]
    fn display_is_readable() {
        assert_eq!(d("1.50").to_string(), "1.5");
        assert_eq!(d("-12e2").to_string(), "-1200");
        assert_eq!(d("0.0012").to_string(), "0.0012");
        assert_eq!(d("1e-400").to_string(), "1e-400");
        assert_eq!(d("123e100").to_string(), "1.23e102");
        assert_eq!(d("-0").to_string(), "0");
    }

    #[test]
    fn rejects_non_numbers_and_huge_literals() {
        for bad in ["", "-", "1e", "a", ".5", "1.2.3", "1e+"] {
            assert!(Decimal::parse(bad).is_none(), "{bad}");
        }
        assert!(Decimal::parse(&"1".repeat(MAX_LITERAL_CHARS + 1)).is_none());
    }
}

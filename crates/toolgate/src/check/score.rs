//! The score rule: (valid calls / all calls) x (expectation score), with the
//! expectation score the mean over the kinds the policy sets. Computed in
//! exact fractions, then rounded half up to two decimals, so `0.125` is
//! `0.13` and `2/3` is `0.67` on every machine.

/// A non-negative fraction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ratio {
    num: u128,
    den: u128,
}

impl Ratio {
    pub(crate) const ONE: Ratio = Ratio { num: 1, den: 1 };
    pub(crate) const ZERO: Ratio = Ratio { num: 0, den: 1 };

    /// `num / den`; a zero denominator reads as 1 (nothing to get wrong).
    pub(crate) fn new(num: usize, den: usize) -> Ratio {
        if den == 0 {
            return Ratio::ONE;
        }
        Ratio {
            num: num as u128,
            den: den as u128,
        }
        .reduced()
    }

    pub(crate) fn of(ok: bool) -> Ratio {
        if ok {
            Ratio::ONE
        } else {
            Ratio::ZERO
        }
    }

    fn reduced(self) -> Ratio {
        let g = gcd(self.num, self.den).max(1);
        Ratio {
            num: self.num / g,
            den: self.den / g,
        }
    }

    pub(crate) fn times(self, other: Ratio) -> Ratio {
        Ratio {
            num: self.num * other.num,
            den: self.den * other.den,
        }
        .reduced()
    }

    /// The mean of `parts`; 1 when there are none.
    pub(crate) fn mean(parts: &[Ratio]) -> Ratio {
        if parts.is_empty() {
            return Ratio::ONE;
        }
        let mut sum = Ratio::ZERO;
        for part in parts {
            sum = Ratio {
                num: sum.num * part.den + part.num * sum.den,
                den: sum.den * part.den,
            }
            .reduced();
        }
        sum.times(Ratio {
            num: 1,
            den: parts.len() as u128,
        })
    }

    /// Rounded half up to two decimals.
    pub(crate) fn rounded(self) -> f64 {
        if self.num == self.den {
            // Every call valid, every expectation met: most verdicts.
            return 1.0;
        }
        // floor((num * 100 + den / 2) / den), exactly, in integers.
        let hundredths = (self.num * 200 + self.den) / (self.den * 2);
        #[allow(clippy::cast_precision_loss)] // at most 100
        let hundredths = hundredths as f64;
        hundredths / 100.0
    }
}

fn gcd(a: u128, b: u128) -> u128 {
    // In 64 bits while both fit (call counts always do): a 128-bit
    // remainder is a call into the runtime.
    if let (Ok(mut a), Ok(mut b)) = (u64::try_from(a), u64::try_from(b)) {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        return u128::from(a);
    }
    let (mut a, mut b) = (a, b);
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_half_up_exactly() {
        assert!((Ratio::new(1, 8).rounded() - 0.13).abs() < f64::EPSILON);
        assert!((Ratio::new(2, 3).rounded() - 0.67).abs() < f64::EPSILON);
        assert!((Ratio::new(1, 3).rounded() - 0.33).abs() < f64::EPSILON);
        assert!((Ratio::new(5, 1000).rounded() - 0.01).abs() < f64::EPSILON);
        assert!((Ratio::new(4, 1000).rounded() - 0.0).abs() < f64::EPSILON);
        assert!((Ratio::ONE.rounded() - 1.0).abs() < f64::EPSILON);
    }

    #[test]
    fn rounds_past_64_bits_as_within() {
        // Products of many kinds' denominators leave 64 bits.
        let big = Ratio {
            num: (1_u128 << 70) + 1,
            den: 3 << 70,
        };
        assert!((big.rounded() - 0.33).abs() < f64::EPSILON);
        assert_eq!(gcd(6 << 70, 4 << 70), 2 << 70);
        assert_eq!(gcd(12, 18), 6);
        assert_eq!(Ratio::new(7, 7), Ratio::ONE);
        assert!((Ratio::new(3, 3).rounded() - 1.0).abs() < f64::EPSILON);
    }

    #[test]
    fn mean_and_product() {
        let mean = Ratio::mean(&[Ratio::new(1, 2), Ratio::ONE, Ratio::ZERO]);
        assert_eq!(mean, Ratio::new(1, 2));
        assert_eq!(Ratio::new(2, 3).times(Ratio::new(3, 4)), Ratio::new(1, 2));
        assert_eq!(Ratio::mean(&[]), Ratio::ONE);
    }
}

//! The error returned when a model is asked about parameters outside its mathematical domain.

use std::fmt;

/// An input outside the domain of the model. Carries the offending value so the caller's
/// message can show it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ModelError {
    /// The spare factor must lie in the open interval (0, 1); at 0 every model diverges.
    SpareFactorOutOfRange(f64),
    /// A block must hold at least one page.
    ZeroPagesPerBlock,
    /// The TRIM fraction must lie in [0, 1) (or [0, 1/2) when TRIMs only hit in-use pages).
    TrimFractionOutOfRange(f64),
    /// Page counts that leave no room for the logical space (or are zero).
    InvalidPageCounts { logical_pages: u64, physical_pages: u64, reserved_pages: u64 },
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ModelError::SpareFactorOutOfRange(sf) => {
                write!(f, "spare factor {sf} is outside the open interval (0, 1)")
            }
            ModelError::ZeroPagesPerBlock => write!(f, "pages per block must be at least 1"),
            ModelError::TrimFractionOutOfRange(q) => {
                write!(f, "TRIM fraction {q} is outside the range the model allows")
            }
            ModelError::InvalidPageCounts { logical_pages, physical_pages, reserved_pages } => {
                write!(
                    f,
                    "{logical_pages} logical pages do not fit in {physical_pages} physical pages \
                     minus {reserved_pages} reserved pages"
                )
            }
        }
    }
}

impl std::error::Error for ModelError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_value() {
        assert!(ModelError::SpareFactorOutOfRange(1.5).to_string().contains("1.5"));
        assert!(ModelError::TrimFractionOutOfRange(0.7).to_string().contains("0.7"));
        let counts = ModelError::InvalidPageCounts { logical_pages: 9, physical_pages: 8, reserved_pages: 1 };
        assert!(counts.to_string().contains("9 logical pages"));
    }
}

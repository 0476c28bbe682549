//! Bonsai's unit system (G = 1, 1 kpc, 100 km/s), so that the galaxy
//! models' numbers mean the same in webgrav and in Bonsai: with
//! G = 4.30091e-6 kpc (km/s)² / M☉ the mass unit is
//! (100 km/s)² · 1 kpc / G = 2.325e9 M☉ and the time unit
//! 1 kpc / (100 km/s) = 9.78 Myr.

/// Length unit in kpc.
pub const KPC: f64 = 1.0;
/// One km/s in velocity units.
pub const KM_PER_S: f64 = 0.01;
/// Mass unit in solar masses.
pub const MASS_UNIT_MSUN: f64 = 2.325e9;
/// Time unit in Myr.
pub const TIME_UNIT_MYR: f64 = 9.78;

/// A mass in solar masses, in mass units.
pub fn msun(m: f64) -> f64 {
    m / MASS_UNIT_MSUN
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_follow_from_g() {
        let g = 4.30091e-6; // kpc (km/s)² / M☉
        let mass_unit = (100.0f64).powi(2) * KPC / g;
        assert!((mass_unit / MASS_UNIT_MSUN - 1.0).abs() < 1e-3);
        // 1 kpc / (1 km/s) = 977.8 Myr (3.0857e16 km / 3.15576e13 s).
        let time_unit = 3.0857e16 / 3.15576e13 * KM_PER_S;
        assert!((time_unit / TIME_UNIT_MYR - 1.0).abs() < 1e-3);
    }
}

//! Prints every model's WAF over a grid of spare factors and block sizes (uniform random
//! single-page writes, no TRIM), for eyeballing against simulated results.

use trimlab_analytic::{
    applicability, fifo_waf, greedy_waf_desnoyers, greedy_waf_limit, greedy_waf_mean_field,
    greedy_waf_with_trim,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("   sf    b   fifo(b=inf)  greedy_limit  desnoyers  mean_field  mf_trim_q0.1  applies");
    for &spare_factor in &[0.07, 0.1, 0.2, 0.3, 0.5] {
        for &pages_per_block in &[32_u32, 64, 128, 256] {
            println!(
                "{spare_factor:5.2} {pages_per_block:4} {:12.4} {:13.4} {:10.4} {:11.4} {:13.4}  {}",
                fifo_waf(spare_factor)?,
                greedy_waf_limit(spare_factor)?,
                greedy_waf_desnoyers(spare_factor, pages_per_block)?,
                greedy_waf_mean_field(spare_factor, pages_per_block)?,
                greedy_waf_with_trim(spare_factor, pages_per_block, 0.1)?,
                match applicability(spare_factor, pages_per_block) {
                    Ok(()) => "yes".to_string(),
                    Err(why) => format!("no: {why}"),
                }
            );
        }
    }
    Ok(())
}

//! Print, as JSON, how many calls `detect` finds in each benchmark case
//! (used by bench/detect.sh to turn medians into calls per second).

#[path = "../benches/cases.rs"]
mod cases;

fn main() {
    let counts: serde_json::Map<String, serde_json::Value> = cases::CASES
        .iter()
        .map(|(name, relative)| {
            let found = toolgate::detect(&cases::load(relative));
            ((*name).to_owned(), found.calls.len().into())
        })
        .collect();
    println!("{}", serde_json::Value::Object(counts));
}

//! The values a likely call takes, through `imurun eval bfcl` with the embedded model and a
//! call started for every case (`--call-prefill always`): what imurun guarantees once a call
//! is made, whatever the model would have written — a listed value makes a call per member,
//! a date is written as its argument asks, a number goes to the argument its unit or the
//! words beside it name, a currency argument takes the code of the currency named for it, and
//! a list of set members the members the question names.

use std::ffi::OsStr;
use std::path::Path;

use serde_json::{Value, json};

use crate::support::{model_path, run_imurun};

fn lines(values: &[Value]) -> String {
    values
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// One case of `category` with `question` and `functions`, and an answer that is never
/// checked here (the calls are).
fn write_case(dir: &Path, category: &str, question: &str, functions: &[Value]) {
    let id = format!("{category}_0");
    std::fs::write(
        dir.join(format!("BFCL_v4_{category}.json")),
        lines(&[
            json!({"id": id, "question": [[{"role": "user", "content": question}]],
                       "function": functions}),
        ]),
    )
    .unwrap();
    std::fs::write(
        dir.join(format!("possible_answer/BFCL_v4_{category}.json")),
        lines(&[json!({"id": id, "ground_truth": [{"none": {}}]})]),
    )
    .unwrap();
}

fn function(name: &str, properties: Value, required: &[&str]) -> Value {
    json!({"name": name, "description": name, "parameters": {"type": "dict",
        "properties": properties, "required": required}})
}

#[test]
fn a_likely_call_takes_what_the_question_states() {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("bfcl");
    std::fs::create_dir_all(data.join("possible_answer")).unwrap();
    write_case(
        &data,
        "parallel",
        "Find the factorial of 5,10 and 15.",
        &[function(
            "math.factorial",
            json!({"number": {"type": "integer", "description": "The number."}}),
            &["number"],
        )],
    );
    let date = |what: &str| json!({"type": "string", "description": format!("The {what} date, in the format MM-DD-YYYY.")});
    write_case(
        &data,
        "simple_python",
        "Book a hotel room for two adults and one child in Paris from July 10, 2022 to \
         July 20, 2022.",
        &[function(
            "hotel_booking.book",
            json!({"city": {"type": "string", "description": "The city."},
                   "from_date": date("start"), "to_date": date("end"),
                   "adults": {"type": "integer", "description": "Adults."},
                   "children": {"type": "integer", "description": "Children."}}),
            &["city", "from_date", "to_date", "adults", "children"],
        )],
    );
    write_case(
        &data,
        "multiple",
        "How much power does a 3.5GHz chip draw at 1.2V?",
        &[function(
            "chip.power",
            json!({"voltage": {"type": "float", "description": "Volts."},
                   "frequency_ghz": {"type": "float", "description": "Clock."}}),
            &["voltage", "frequency_ghz"],
        )],
    );
    write_case(
        &data,
        "parallel_multiple",
        "Convert 150 Euros to Canadian dollars showing the fees and the rate.",
        &[function(
            "exchange.convert",
            json!({"amount": {"type": "integer", "description": "How much."},
                   "from_currency": {"type": "string", "description": "From."},
                   "to_currency": {"type": "string", "description": "To."},
                   "details": {"type": "array", "description": "What to show.",
                               "items": {"type": "string", "enum": ["rate", "fees", "history"]}}}),
            &["amount", "from_currency", "to_currency", "details"],
        )],
    );
    let out = home.path().join("predictions.jsonl");
    let model = model_path();
    let mut args = vec![
        "eval",
        "bfcl",
        "--data",
        data.to_str().unwrap(),
        "--model",
        model.to_str().unwrap(),
        "--call-prefill",
        "always",
        "--out",
        out.to_str().unwrap(),
    ];
    for category in ["parallel", "simple_python", "multiple", "parallel_multiple"] {
        args.extend_from_slice(&["--category", category]);
    }
    let envs: [(&str, &OsStr); 1] = [("IMURUN_HOME", home.path().as_os_str())];
    let output = run_imurun(&args, "", &envs);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let predictions: Vec<Value> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line.get("id").is_some())
        .collect();
    let calls = |id: &str| -> Vec<Value> {
        predictions
            .iter()
            .find(|line| line["id"] == id)
            .and_then(|line| line["calls"].as_array().cloned())
            .unwrap_or_else(|| panic!("no calls for {id}: {predictions:?}"))
    };
    let factorials: Vec<Value> = calls("parallel_0")
        .iter()
        .map(|call| call["args"]["number"].clone())
        .collect();
    assert_eq!(factorials, [json!(5), json!(10), json!(15)]);
    let booking = &calls("simple_python_0")[0]["args"];
    assert_eq!(booking["from_date"], "07-10-2022", "{booking}");
    assert_eq!(booking["to_date"], "07-20-2022", "{booking}");
    assert_eq!(booking["adults"], 2, "{booking}");
    assert_eq!(booking["children"], 1, "{booking}");
    let chip = &calls("multiple_0")[0]["args"];
    assert_eq!(chip["frequency_ghz"], 3.5, "{chip}");
    assert_eq!(chip["voltage"], 1.2, "{chip}");
    let exchange = &calls("parallel_multiple_0")[0]["args"];
    assert_eq!(exchange["from_currency"], "EUR", "{exchange}");
    assert_eq!(exchange["to_currency"], "CAD", "{exchange}");
    assert_eq!(exchange["details"], json!(["fees", "rate"]), "{exchange}");
    assert_eq!(exchange["amount"], 150, "{exchange}");
}

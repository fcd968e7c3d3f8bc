//! The currencies a question names, read as the ISO 4217 codes a currency argument takes:
//! "150 Euros to Canadian dollars" names `EUR` and `CAD`. Nothing here asks the model.

use crate::stated::word_spans;
use crate::tool_match::{split_camel_case, words};

/// Currencies named in words, the longer names first: each name's words (a plural in `s`
/// counts) and its code.
const NAMES: [(&[&str], &str); 31] = [
    (&["new", "zealand", "dollar"], "NZD"),
    (&["hong", "kong", "dollar"], "HKD"),
    (&["south", "african", "rand"], "ZAR"),
    (&["us", "dollar"], "USD"),
    (&["american", "dollar"], "USD"),
    (&["canadian", "dollar"], "CAD"),
    (&["australian", "dollar"], "AUD"),
    (&["singapore", "dollar"], "SGD"),
    (&["british", "pound"], "GBP"),
    (&["pound", "sterling"], "GBP"),
    (&["japanese", "yen"], "JPY"),
    (&["chinese", "yuan"], "CNY"),
    (&["indian", "rupee"], "INR"),
    (&["swiss", "franc"], "CHF"),
    (&["mexican", "peso"], "MXN"),
    (&["korean", "won"], "KRW"),
    (&["russian", "ruble"], "RUB"),
    (&["brazilian", "real"], "BRL"),
    (&["dollar"], "USD"),
    (&["euro"], "EUR"),
    (&["pound"], "GBP"),
    (&["sterling"], "GBP"),
    (&["yen"], "JPY"),
    (&["yuan"], "CNY"),
    (&["renminbi"], "CNY"),
    (&["rupee"], "INR"),
    (&["franc"], "CHF"),
    (&["peso"], "MXN"),
    (&["ruble"], "RUB"),
    (&["rouble"], "RUB"),
    (&["rand"], "ZAR"),
];

/// Codes a question may write as they are (in capitals).
const CODES: [&str; 20] = [
    "USD", "EUR", "GBP", "JPY", "CAD", "AUD", "CHF", "CNY", "INR", "MXN", "NZD", "HKD", "SGD",
    "KRW", "RUB", "BRL", "ZAR", "SEK", "NOK", "DKK",
];

/// Signs written onto an amount.
const SIGNS: [(char, &str); 4] = [('$', "USD"), ('€', "EUR"), ('£', "GBP"), ('¥', "JPY")];

/// Words before a currency that make it the one converted to.
const TARGET_CUES: [&str; 3] = ["to", "into", "in"];

/// One currency a question names.
#[derive(Debug, Clone, PartialEq)]
struct Named {
    code: &'static str,
    /// Named right after "to", "into" or "in": the one converted to.
    target: bool,
    /// Named on an amount ("150 Euros", "$100"): the one converted from.
    amount: bool,
}

/// What a currency argument is, by its name's words.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Role {
    /// `from_currency`, `source_currency`, `base_currency`.
    From,
    /// `to_currency`, `target_currency`.
    To,
    /// `currency`.
    Any,
}

/// The role of argument `name` when it takes a currency (its name says "currency").
fn role(name: &str) -> Option<Role> {
    let named = words(&split_camel_case(name));
    if !named
        .iter()
        .any(|word| word == "currency" || word == "currencies")
    {
        return None;
    }
    let has = |cues: &[&str]| named.iter().any(|word| cues.contains(&word.as_str()));
    Some(if has(&["to", "target", "into", "destination", "quote"]) {
        Role::To
    } else if has(&["from", "source", "base", "original"]) {
        Role::From
    } else {
        Role::Any
    })
}

/// The currencies `question` names, in order: codes in capitals ("USD"), names with their
/// plurals ("Euros", "Canadian dollars", "Japanese yen"), and signs on an amount ("$100",
/// "€50").
fn named_currencies(question: &str) -> Vec<Named> {
    let spans = word_spans(question);
    let bare: Vec<&str> = spans
        .iter()
        .map(|&(from, to)| &question[from..to])
        .collect();
    let lower: Vec<String> = bare.iter().map(|word| word.to_lowercase()).collect();
    let is_number = |word: &str| {
        word.trim_start_matches(|c: char| SIGNS.iter().any(|(sign, _)| *sign == c))
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit())
    };
    let cued = |at: usize| at > 0 && TARGET_CUES.contains(&lower[at - 1].as_str());
    let after_a_number = |at: usize| at > 0 && is_number(bare[at - 1]);
    let mut named = Vec::new();
    let mut at = 0;
    while at < bare.len() {
        // The currency the words from `at` name, whether it is on an amount, and how many
        // words name it.
        let sign = SIGNS.iter().find(|(sign, _)| {
            bare[at].starts_with(*sign)
                && bare[at][sign.len_utf8()..].starts_with(|c: char| c.is_ascii_digit())
        });
        let found = if let Some((_, code)) = sign {
            Some((*code, true, 1))
        } else if let Some(code) = CODES.iter().find(|code| bare[at] == **code) {
            Some((*code, after_a_number(at), 1))
        } else {
            NAMES
                .iter()
                .find(|(name, _)| {
                    name.len() <= lower.len() - at
                        && name.iter().zip(&lower[at..]).all(|(named, said)| {
                            said == named || said.strip_suffix('s') == Some(named)
                        })
                })
                .map(|(name, code)| (*code, after_a_number(at), name.len()))
        };
        match found {
            Some((code, amount, words)) => {
                named.push(Named {
                    code,
                    target: cued(at),
                    amount,
                });
                at += words;
            }
            None => at += 1,
        }
    }
    named
}

/// The code of the currency `question` names for argument `name`, as JSON, when the
/// argument takes a currency and the question names one no earlier argument took (`used`,
/// JSON values): one converted to goes to a `to_currency` (named after "to", "into" or "in",
/// else not on the amount), one converted from to a `from_currency` (named on the amount,
/// else not after those words), the first named to a plain `currency`.
pub(crate) fn currency_for(question: &str, name: &str, used: &[String]) -> Option<String> {
    let role = role(name)?;
    let named: Vec<Named> = named_currencies(question)
        .into_iter()
        .filter(|named| !used.contains(&format!("\"{}\"", named.code)))
        .collect();
    let first = |wanted: &dyn Fn(&Named) -> bool| named.iter().find(|named| wanted(named));
    let chosen = match role {
        Role::To => first(&|named| named.target).or_else(|| first(&|named| !named.amount)),
        Role::From => first(&|named| named.amount).or_else(|| first(&|named| !named.target)),
        Role::Any => None,
    }
    .or_else(|| named.first())?;
    Some(format!("\"{}\"", chosen.code))
}

/// Whether argument `name` takes a currency and `code` is one `question` names.
pub(crate) fn names_currency(question: &str, name: &str, code: &str) -> bool {
    role(name).is_some()
        && named_currencies(question)
            .iter()
            .any(|named| named.code == code)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(question: &str) -> (Option<String>, Option<String>) {
        let from = currency_for(question, "from_currency", &[]);
        let used: Vec<String> = from.iter().cloned().collect();
        (from, currency_for(question, "to_currency", &used))
    }

    #[test]
    fn a_currency_argument_takes_the_code_of_the_currency_named_for_it() {
        let codes = |from: &str, to: &str| (Some(format!("\"{from}\"")), Some(format!("\"{to}\"")));
        assert_eq!(
            pair("Convert 150 Euros to Canadian dollars."),
            codes("EUR", "CAD")
        );
        assert_eq!(
            pair("I have 100 euro. How much is it in USD?"),
            codes("EUR", "USD")
        );
        assert_eq!(
            pair("How many Japanese yen do I get for 500 US dollars?"),
            codes("USD", "JPY")
        );
        assert_eq!(pair("The rate from GBP to AUD today"), codes("GBP", "AUD"));
        assert_eq!(
            pair("Change $250 into pounds sterling"),
            codes("USD", "GBP")
        );
        assert_eq!(
            currency_for("Prices in Swiss francs", "currency", &[]).as_deref(),
            Some("\"CHF\"")
        );
        // No currency named, or an argument that takes none.
        assert_eq!(pair("Convert 5 miles to kilometres"), (None, None));
        assert_eq!(currency_for("150 Euros", "amount", &[]), None);
        assert_eq!(
            currency_for("150 Euros", "baseCurrency", &[]).as_deref(),
            Some("\"EUR\"")
        );
        assert!(names_currency("150 Euros to yen", "to_currency", "JPY"));
        assert!(!names_currency("150 Euros to yen", "to_currency", "USD"));
        assert!(!names_currency("150 Euros to yen", "amount", "EUR"));
    }
}

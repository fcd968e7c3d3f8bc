//! Arithmetic in a prompt ("What is 17 times 23?", "calculate (3 + 4) * 2", "15% of 80",
//! "square root of 2"), as an expression the `calculate` tool reads: the pre-fetch's
//! arithmetic intent. A fixed reading of the words, never the model's.
//!
//! Only a prompt that asks for a result counts: it holds a word that asks ("what is",
//! "calculate", "how much is", ...), ends with `=`, or is nothing but the sum. Dates (`2026-12-01`),
//! ranges (`10-12`) and versions are not sums: a minus needs spaces or the word, and the sum
//! needs two numbers and an operator (or a root, a square or a cube of one).

/// Words that ask for a result.
const ASKING: &[&str] = &[
    "what is",
    "what's",
    "whats",
    "calculate",
    "compute",
    "work out",
    "how much is",
    "how much are",
    "evaluate",
    "solve",
    "equals",
    "equal to",
];

/// Words read as operators, longest first.
const WORDS: &[(&str, &str)] = &[
    ("to the power of", " ^ "),
    ("multiplied by", " * "),
    ("divided by", " / "),
    ("square root of", " sqrt "),
    ("the square root of", " sqrt "),
    ("percent of", " pctof "),
    ("raised to", " ^ "),
    ("squared", " squared "),
    ("cubed", " cubed "),
    ("times", " * "),
    ("plus", " + "),
    ("minus", " - "),
    ("modulo", " % "),
    ("mod", " % "),
    ("over", " / "),
];

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Number(String),
    /// `+ - * / ^ %`
    Operator(char),
    Open,
    Close,
    Sqrt,
    /// `N% of M`, `N percent of M`
    PercentOf,
    Squared,
    Cubed,
    /// Anything else: ends a run.
    Other,
}

/// Arithmetic said with verbs and fractions, each a pattern over the numbers `A` and `B` in
/// order, and the expression it asks for: "multiply 19 by 21", "take 58 away from 200",
/// "half of 350". Read before the operator words.
const VERBAL: &[(&[&str], &str)] = &[
    (&["multiply", "A", "by", "B"], "A * B"),
    (&["multiply", "A", "and", "B"], "A * B"),
    (&["product", "of", "A", "and", "B"], "A * B"),
    (&["add", "A", "and", "B"], "A + B"),
    (&["add", "A", "to", "B"], "A + B"),
    (&["sum", "of", "A", "and", "B"], "A + B"),
    (&["A", "and", "B", "added"], "A + B"),
    (&["subtract", "A", "from", "B"], "B - A"),
    (&["take", "A", "away", "from", "B"], "B - A"),
    (&["take", "away", "A", "from", "B"], "B - A"),
    (&["take", "A", "from", "B"], "B - A"),
    (&["A", "less", "than", "B"], "B - A"),
    (&["difference", "between", "A", "and", "B"], "A - B"),
    (&["divide", "A", "by", "B"], "A / B"),
    (&["quotient", "of", "A", "and", "B"], "A / B"),
    (&["half", "of", "A"], "A / 2"),
    (&["third", "of", "A"], "A / 3"),
    (&["quarter", "of", "A"], "A / 4"),
    (&["double", "A"], "A * 2"),
    (&["twice", "A"], "A * 2"),
    (&["triple", "A"], "A * 3"),
];

/// The expression a prompt says with verbs or fractions (`VERBAL`), or as "how many" over
/// two numbers where one counts groups of the other ("12 boxes with 24 eggs in each", "3
/// bags of 5 apples each", "24 per box, 12 boxes").
fn verbal(lower: &str) -> Option<String> {
    let words: Vec<String> = lower
        .split(|c: char| c.is_whitespace() || matches!(c, '?' | '!' | ';' | ':' | '(' | ')'))
        .map(|word| word.trim_end_matches(['.', ',']).to_owned())
        .filter(|word| !word.is_empty())
        .collect();
    let number = |word: &str| -> Option<String> {
        let plain = word.replace(',', "");
        plain
            .parse::<f64>()
            .ok()
            .filter(|value| value.is_finite())
            .map(|_| plain)
    };
    for (pattern, shape) in VERBAL {
        for start in 0..words.len() {
            let mut numbers: Vec<String> = Vec::new();
            let mut at = start;
            let matched = pattern.iter().all(|part| {
                let Some(word) = words.get(at) else {
                    return false;
                };
                at += 1;
                match *part {
                    "A" | "B" => number(word).map(|n| numbers.push(n)).is_some(),
                    literal => word == literal || (literal == "third" && word == "thirds"),
                }
            });
            if matched {
                let mut expression = (*shape).to_owned();
                for (slot, value) in ["A", "B"].iter().zip(&numbers) {
                    expression = expression.replacen(slot, value, 1);
                }
                return Some(expression);
            }
        }
    }
    let numbers: Vec<String> = words.iter().filter_map(|word| number(word)).collect();
    let groups = ["each", "per", "every"]
        .iter()
        .any(|word| words.iter().any(|w| w == word));
    if lower.contains("how many") && groups && numbers.len() == 2 {
        return Some(format!("{} * {}", numbers[0], numbers[1]));
    }
    changes(&words, &number)
}

/// Verbs before a number that take that many away from what there was.
const LOSSES: &[&str] = &[
    "give", "gave", "gives", "giving", "eat", "ate", "eats", "lose", "lost", "loses", "sell",
    "sold", "sells", "spend", "spent", "use", "used", "uses", "break", "broke", "drop", "dropped",
    "remove", "removed", "throw", "threw", "donate", "donated", "lend", "lent", "pay", "paid",
    "away", "minus", "less",
];

/// Verbs before a number that add that many to what there was.
const GAINS: &[&str] = &[
    "buy", "bought", "buys", "get", "got", "gets", "find", "found", "finds", "receive", "received",
    "add", "added", "earn", "earned", "pick", "picked", "win", "won", "more", "another", "plus",
    "gain", "gained",
];

/// A count that changes ("I have 12 apples and give away 5; how many are left?", "she had
/// 30 euros, spent 12 and then earned 7 — how much does she have now?"): asked with "how
/// many" or "how much" and a word for what is left or held now, the first number what there
/// was, each later one taken away or added by the nearest change verb up to three words
/// before it ("gave me" adds: it was given to the person). `None` unless every later number
/// has such a verb.
fn changes(words: &[String], number: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    let text = words.join(" ");
    let asks = (text.contains("how many") || text.contains("how much"))
        && [
            "left",
            "remain",
            "remaining",
            "now",
            "have",
            "has",
            "total",
            "altogether",
        ]
        .iter()
        .any(|word| words.iter().any(|w| w == word));
    if !asks {
        return None;
    }
    let mut expression = String::new();
    for (at, word) in words.iter().enumerate() {
        let Some(value) = number(word) else { continue };
        if expression.is_empty() {
            expression = value;
            continue;
        }
        let before = &words[at.saturating_sub(3)..at];
        let verb = before
            .iter()
            .rposition(|word| LOSSES.contains(&word.as_str()) || GAINS.contains(&word.as_str()))?;
        let given_to_me = before.get(verb + 1).is_some_and(|next| next == "me");
        let sign = if LOSSES.contains(&before[verb].as_str()) && !given_to_me {
            '-'
        } else {
            '+'
        };
        expression = format!("{expression} {sign} {value}");
    }
    expression.contains(' ').then_some(expression)
}

/// Number words and their values: "seventeen times twelve" is 17 * 12.
const NUMBER_WORDS: &[(&str, u64)] = &[
    ("zero", 0),
    ("one", 1),
    ("two", 2),
    ("three", 3),
    ("four", 4),
    ("five", 5),
    ("six", 6),
    ("seven", 7),
    ("eight", 8),
    ("nine", 9),
    ("ten", 10),
    ("eleven", 11),
    ("twelve", 12),
    ("thirteen", 13),
    ("fourteen", 14),
    ("fifteen", 15),
    ("sixteen", 16),
    ("seventeen", 17),
    ("eighteen", 18),
    ("nineteen", 19),
    ("twenty", 20),
    ("thirty", 30),
    ("forty", 40),
    ("fifty", 50),
    ("sixty", 60),
    ("seventy", 70),
    ("eighty", 80),
    ("ninety", 90),
];

/// `lower` with runs of number words written as digits ("three hundred and five" → "305",
/// "twenty-one" → "21"); other words as they are.
pub(crate) fn digits_for_words(lower: &str) -> String {
    /// A run being read: its thousands so far and the part below a thousand.
    #[derive(Default)]
    struct Run {
        thousands: u64,
        part: u64,
    }
    let value_of = |piece: &str| {
        NUMBER_WORDS
            .iter()
            .find(|(name, _)| *name == piece)
            .map(|(_, n)| *n)
    };
    let mut out: Vec<String> = Vec::new();
    let mut run: Option<Run> = None;
    let end = |out: &mut Vec<String>, run: &mut Option<Run>| {
        if let Some(done) = run.take() {
            out.push((done.thousands + done.part).to_string());
        }
    };
    for raw in lower.split(' ') {
        let word = raw.trim_end_matches(['?', '.', '!', ',']);
        let trailing = &raw[word.len()..];
        let values: Option<Vec<u64>> = word.split('-').map(value_of).collect();
        match (values, run.as_mut()) {
            (Some(values), _) if !word.is_empty() => {
                run.get_or_insert_with(Run::default).part += values.iter().sum::<u64>();
            }
            (None, Some(current)) if word == "hundred" => current.part = current.part.max(1) * 100,
            (None, Some(current)) if word == "thousand" => {
                current.thousands = (current.thousands + current.part.max(1)) * 1000;
                current.part = 0;
            }
            (None, Some(_)) if word == "and" && trailing.is_empty() => continue,
            _ => {
                end(&mut out, &mut run);
                out.push(raw.to_owned());
                continue;
            }
        }
        if !trailing.is_empty() {
            end(&mut out, &mut run);
            if let Some(last) = out.last_mut() {
                last.push_str(trailing);
            }
        }
    }
    end(&mut out, &mut run);
    out.join(" ")
}

/// The expression the prompt asks to work out, if it asks for one.
pub(crate) fn expression(prompt: &str) -> Option<String> {
    let lower = digits_for_words(&prompt.to_lowercase());
    if let Some(expression) = verbal(&lower) {
        return Some(expression);
    }
    // `2 ^ 10 = ?` asks; `the 2 + 2 = 5 novel` does not.
    let ends_equals = lower.rsplit_once('=').is_some_and(|(_, after)| {
        after
            .trim_matches(|c: char| c.is_whitespace() || c == '?')
            .is_empty()
    });
    let asks = ASKING.iter().any(|words| lower.contains(words)) || ends_equals;
    let tokens = tokens(&lower);
    let best = runs(&tokens)
        .into_iter()
        .filter_map(|run| render(run))
        .max_by_key(|(_, numbers, _)| *numbers)?;
    let (expression, _, covers_prompt) = best;
    (asks || covers_prompt(&tokens)).then_some(expression)
}

/// Splits the lower-cased prompt into tokens.
fn tokens(lower: &str) -> Vec<Token> {
    let mut text = format!(" {} ", lower.replace(['×', '✕'], " * ").replace('÷', " / "));
    text = text.replace('−', " - ").replace("**", " ^ ");
    text = text.replace("% of ", " pctof ");
    for (words, symbol) in WORDS {
        text = replace_words(&text, words, symbol);
    }
    let mut tokens = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut index = 0;
    while index < chars.len() {
        let c = chars[index];
        if c.is_whitespace() || c == '?' || c == '!' {
            index += 1;
            continue;
        }
        if c.is_ascii_digit()
            || (c == '.' && chars.get(index + 1).is_some_and(char::is_ascii_digit))
        {
            let start = index;
            while index < chars.len()
                && (chars[index].is_ascii_digit()
                    || (matches!(chars[index], '.' | ',')
                        && chars.get(index + 1).is_some_and(char::is_ascii_digit)))
            {
                index += 1;
            }
            let number: String = chars[start..index].iter().filter(|c| **c != ',').collect();
            // `2026-12-01`, `10-12`, `3x`: a number glued to a minus or a letter is no operand.
            let glued = chars
                .get(index)
                .is_some_and(|next| next.is_alphabetic() || *next == '-' || *next == ':')
                || (start > 0 && (chars[start - 1].is_alphabetic() || chars[start - 1] == '-'));
            tokens.push(if glued {
                Token::Other
            } else {
                Token::Number(number)
            });
            continue;
        }
        if c.is_alphabetic() {
            let start = index;
            while index < chars.len() && chars[index].is_alphanumeric() {
                index += 1;
            }
            let word: String = chars[start..index].iter().collect();
            tokens.push(match word.as_str() {
                "sqrt" => Token::Sqrt,
                "pctof" => Token::PercentOf,
                "squared" => Token::Squared,
                "cubed" => Token::Cubed,
                "x" => Token::Operator('*'),
                _ => Token::Other,
            });
            continue;
        }
        let spaced = |at: usize| {
            chars
                .get(at.wrapping_sub(1))
                .is_some_and(|c| c.is_whitespace())
                && chars.get(at + 1).is_some_and(|c| c.is_whitespace())
        };
        tokens.push(match c {
            '+' | '*' | '/' | '^' => Token::Operator(c),
            '%' => Token::Operator('%'),
            // A minus between numbers needs spaces: `10-12` is a range.
            '-' if spaced(index) => Token::Operator('-'),
            '(' => Token::Open,
            ')' => Token::Close,
            _ => Token::Other,
        });
        index += 1;
    }
    tokens
}

/// `text` with `words` replaced where they stand as whole words.
fn replace_words(text: &str, words: &str, symbol: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(words) {
        let before = rest[..at].chars().next_back();
        let after = rest[at + words.len()..].chars().next();
        let whole =
            !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric);
        out.push_str(&rest[..at]);
        out.push_str(if whole { symbol } else { words });
        rest = &rest[at + words.len()..];
    }
    out.push_str(rest);
    out
}

/// The runs of arithmetic tokens between other words.
fn runs(tokens: &[Token]) -> Vec<&[Token]> {
    tokens
        .split(|token| *token == Token::Other)
        .filter(|run| !run.is_empty())
        .collect()
}

/// A run as an expression: (text, how many numbers, whether it is the whole prompt's
/// arithmetic); `None` unless it is a well-formed sum with an operator.
#[allow(clippy::type_complexity)]
fn render(run: &[Token]) -> Option<(String, usize, fn(&[Token]) -> bool)> {
    let mut out = String::new();
    let mut numbers = 0;
    let mut operators = 0;
    let mut depth = 0i32;
    // Whether the next token must be an operand (a number, `(`, a root).
    let mut want_operand = true;
    let mut iter = run.iter().peekable();
    while let Some(token) = iter.next() {
        match token {
            Token::Number(number) if want_operand => {
                numbers += 1;
                if iter.peek() == Some(&&Token::PercentOf) {
                    iter.next();
                    out.push_str(&format!("{number} / 100 * "));
                    operators += 1;
                    continue;
                }
                out.push_str(number);
                want_operand = false;
            }
            Token::Operator('-') if want_operand && out.is_empty() => out.push('-'),
            Token::Operator(op) if !want_operand => {
                out.push_str(&format!(" {op} "));
                operators += 1;
                want_operand = true;
            }
            Token::Open if want_operand => {
                depth += 1;
                out.push('(');
            }
            Token::Close if !want_operand && depth > 0 => {
                depth -= 1;
                out.push(')');
            }
            Token::Sqrt if want_operand => {
                let Some(Token::Number(number)) = iter.next() else {
                    return None;
                };
                numbers += 1;
                operators += 1;
                out.push_str(&format!("sqrt({number})"));
                want_operand = false;
            }
            Token::Squared | Token::Cubed if !want_operand => {
                operators += 1;
                out.push_str(if *token == Token::Squared {
                    " ^ 2"
                } else {
                    " ^ 3"
                });
            }
            _ => return None,
        }
    }
    let complete = !want_operand && depth == 0;
    let is_sum = operators > 0 && (numbers >= 2 || out.contains("sqrt") || out.contains(" ^ "));
    (complete && is_sum).then(|| {
        let whole: fn(&[Token]) -> bool = |tokens| runs(tokens).len() == 1;
        (out.trim().to_owned(), numbers, whole)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_said_with_verbs_and_fractions_are_read() {
        for (prompt, expected) in [
            ("Could you multiply 6 by 7?", "6 * 7"),
            ("Add 1,200 and 34 please", "1200 + 34"),
            ("subtract 5 from 12", "12 - 5"),
            ("Take 3 away from 10.", "10 - 3"),
            ("what's half of 90?", "90 / 2"),
            ("Divide 81 by 9", "81 / 9"),
            ("What is the product of 4 and 2.5?", "4 * 2.5"),
            (
                "I bought 3 bags with 5 apples in each. How many apples?",
                "3 * 5",
            ),
            (
                "I have twelve apples and give away five. How many are left?",
                "12 - 5",
            ),
            (
                "She had 30 euros, spent 12, then earned 7. How much does she have now?",
                "30 - 12 + 7",
            ),
            (
                "Tom has 4 marbles and his friend gave me 3 more... how many do we have in total?",
                "4 + 3",
            ),
        ] {
            assert_eq!(expression(prompt).as_deref(), Some(expected), "{prompt}");
        }
        for prompt in [
            "Add milk to my list",
            "Take the dog out at 5",
            "half an hour",
        ] {
            assert_eq!(expression(prompt), None, "{prompt}");
        }
    }

    #[test]
    fn sums_people_ask_for_are_read() {
        let cases = [
            ("What is 17 times 23?", "17 * 23"),
            ("what's 17*23", "17 * 23"),
            ("Calculate (3 + 4) * 2 please", "(3 + 4) * 2"),
            ("What is 12 x 34?", "12 * 34"),
            ("How much is 1,250 divided by 5?", "1250 / 5"),
            ("What's 15% of 80?", "15 / 100 * 80"),
            ("what is 20 percent of 150", "20 / 100 * 150"),
            ("What is the square root of 2?", "sqrt(2)"),
            ("what is 7 squared", "7 ^ 2"),
            ("2 to the power of 10 = ?", "2 ^ 10"),
            ("100 - 37", "100 - 37"),
            ("What is 3.5 plus 1.25?", "3.5 + 1.25"),
            ("17 × 23", "17 * 23"),
        ];
        for (prompt, expected) in cases {
            assert_eq!(expression(prompt).as_deref(), Some(expected), "{prompt}");
        }
    }

    #[test]
    fn numbers_that_are_not_sums_are_left_alone() {
        for prompt in [
            "What is the date 2026-12-01 in words?",
            "Meet me at 10-12 tomorrow",
            "I have 3 cats and 2 dogs. Write a poem about them.",
            "What is Python 3.14?",
            "List the files in my workspace.",
            "What time is it?",
            "What is 5?",
            "Tell me about the 2 + 2 = 5 novel",
            "Write 3 haiku",
            "I have 2 kids aged 5 and 7. How many hours of screen time should they have?",
        ] {
            assert_eq!(expression(prompt), None, "{prompt}");
        }
    }
}

//! Telling a question about the present from any other question, and an answer that admits
//! it could not check live data from one that did not.
//!
//! Word lists, not a model: the check runs on every turn before any generation and must be
//! cheap and predictable. It errs towards "live" for present-tense questions, because the
//! cost of a false positive is one extra reminder step, while a false negative lets a small
//! model state yesterday's prices as today's.

/// Words that make a question about the present when they appear as whole words.
const PRESENT_MARKERS: &[&str] = &[
    "now",
    "currently",
    "current",
    "today",
    "today's",
    "tonight",
    "latest",
    "live",
    "newest",
    "recent",
    "recently",
    "nowadays",
    "presently",
];

/// Phrases that make a question about the present wherever they appear.
const PRESENT_PHRASES: &[&str] = &[
    "right now",
    "at the moment",
    "this morning",
    "this afternoon",
    "this evening",
    "this week",
    "this weekend",
    "so far",
    "as of",
    "up to date",
    "open now",
    "still open",
];

/// Things whose value changes from hour to hour: asked about in the present tense, they are
/// live data even without "now".
const LIVE_TOPICS: &[&str] = &[
    "weather",
    "forecast",
    "raining",
    "snowing",
    "news",
    "headlines",
    "price",
    "prices",
    "exchange rate",
    "stock",
    "shares",
    "bitcoin",
    "btc",
    "ethereum",
    "score",
    "scores",
    "traffic",
    "trading at",
    "temperature in",
    "temperature outside",
    "how hot is it",
    "how cold is it",
    "who is winning",
];

/// Offices whose holder changes: "who is the CEO of ..." is a question about the present.
const OFFICES: &[&str] = &[
    "president",
    "prime minister",
    "ceo",
    "chancellor",
    "mayor",
    "governor",
    "king",
    "queen",
    "pope",
    "champion",
    "leader",
];

/// Openings of how-to and definition questions: about doing or meaning, not about a value.
const HOW_TO_OPENINGS: &[&str] = &[
    "how do i",
    "how do you",
    "how do we",
    "how can i",
    "how can you",
    "how can we",
    "how should i",
    "how would i",
    "how to",
    "how does",
    "explain",
    "teach me",
    "write ",
    "show me how",
    "what does",
    "what is a ",
    "what is an ",
    "what are some",
    "define",
    "why do",
    "why does",
];

/// Words that put a question in the past when nothing marks it as present.
const PAST_WORDS: &[&str] = &[
    "was",
    "were",
    "did",
    "had",
    "ago",
    "yesterday",
    "history",
    "historical",
    "founded",
    "invented",
    "born",
    "died",
    "first",
];

/// Openings that make a sentence a question or a request for information.
const QUESTION_OPENINGS: &[&str] = &[
    "what", "what's", "whats", "who", "who's", "whose", "which", "when", "where", "where's", "why",
    "how", "how's", "is", "are", "am", "was", "were", "will", "would", "do", "does", "did", "can",
    "could", "should", "shall", "has", "have", "any", "tell", "give", "show", "check", "find",
    "look", "get", "fetch", "search", "please",
];

/// Phrases by which an answer admits it could not check live data.
const ADMISSIONS: &[&str] = &[
    "can't be checked",
    "cannot be checked",
    "can't check",
    "cannot check",
    "can not check",
    "unable to check",
    "not able to check",
    "couldn't check",
    "could not check",
    "can't look",
    "cannot look",
    "can't access",
    "cannot access",
    "unable to access",
    "don't have access to live",
    "do not have access to live",
    "don't have access to real-time",
    "do not have access to real-time",
    "don't have access to current",
    "do not have access to current",
    "don't have real-time",
    "do not have real-time",
    "no access to live",
    "no access to real-time",
    "can't verify",
    "cannot verify",
    "unable to verify",
    "can't provide live",
    "can't provide real-time",
    "cannot provide real-time",
    "cannot provide live",
];

/// Whether `text` asks about live data in the present tense, in question form: the time
/// somewhere, the weather, prices, news, scores, anything "now", "today", "currently" or
/// "latest". Past facts, how-to questions and questions about time zones in general are not.
pub fn is_realtime(text: &str) -> bool {
    let text = normalise(text);
    if !is_question_form(&text) {
        return false;
    }
    let words: Vec<&str> = words(&text).collect();
    let present = words.iter().any(|word| PRESENT_MARKERS.contains(word))
        || PRESENT_PHRASES.iter().any(|phrase| text.contains(phrase));
    if HOW_TO_OPENINGS
        .iter()
        .any(|opening| text.starts_with(opening))
    {
        return false;
    }
    if mentions_a_year(&words) {
        return false;
    }
    if present {
        return true;
    }
    if words.iter().any(|word| PAST_WORDS.contains(word)) {
        return false;
    }
    if text.contains("time zone") || text.contains("timezone") || text.contains("time difference") {
        return false;
    }
    LIVE_TOPICS
        .iter()
        .any(|topic| contains_phrase(&text, topic))
        || asks_for_office(&text)
        || time_question(&text, &words)
}

/// Nouns that name the present's time or date.
const TIME_NOUNS: &[&str] = &[
    "time", "clock", "hour", "hours", "date", "day", "weekday", "month", "year", "today",
];

/// Parts of the day and the week's end (the days by name are `WEEKDAYS`, the months
/// `stated::MONTHS` but "may", a verb as often): "is it morning yet?", "is it the weekend?".
const DAY_PARTS: &[&str] = &[
    "morning",
    "afternoon",
    "evening",
    "night",
    "nighttime",
    "midnight",
    "noon",
    "midday",
    "late",
    "early",
    "lunchtime",
    "bedtime",
    "weekend",
    "weekday",
];

/// Words between a question word and the time noun it asks for ("what's **the** date",
/// "what **is the current** time", "which **day of the** week").
const TIME_FILLERS: &[&str] = &[
    "is", "'s", "the", "current", "exact", "local", "today's", "todays", "it", "does", "say",
];

/// Words after a time noun that make it something else's time ("what time **does the
/// store** open", "what day **is the** meeting"): an auxiliary followed by another subject.
const AUXILIARIES: &[&str] = &[
    "does", "do", "did", "will", "would", "should", "can", "could", "is", "are", "was", "were",
    "shall",
];

/// Subjects after an auxiliary that keep the question about the present ("what time **is
/// it**", "which month **are we** in").
const PRESENT_SUBJECTS: &[&str] = &["it", "we", "today", "now", "there", "here", "right", "this"];

/// Whether `prompt` asks for the current time, date, weekday or part of the day, in any
/// wording: a question word asking for a time noun ("what hour", "which month", "what's the
/// date", "what's today"), "is it" with a part of the day ("is it morning yet?", "how late is
/// it"), a time noun marked as the present's ("the current time", "the date right now",
/// "the clock"), or a request for one ("tell me the time", "got the time?"). A time noun
/// followed by another subject ("what time does the store open") is about that subject.
pub fn asks_the_time(prompt: &str) -> bool {
    let text = normalise(prompt);
    let words: Vec<&str> = words(&text).collect();
    time_question(&text, &words)
}

/// Whether `prompt` asks for the current weekday: a time question (`asks_the_time`) that
/// names the day or a weekday ("what day is it", "which day of the week", "weekday in
/// Honolulu?", "is it friday yet?"); "what's today's date" asks for the date alone.
pub(crate) fn asks_the_weekday(prompt: &str) -> bool {
    let text = normalise(prompt);
    let words: Vec<&str> = words(&text).collect();
    time_question(&text, &words)
        && words.iter().any(|word| {
            let word = word.trim_end_matches("'s");
            ["day", "weekday"].contains(&word) || crate::ground::WEEKDAYS.contains(&word)
        })
}

fn time_question(text: &str, words: &[&str]) -> bool {
    if HOW_TO_OPENINGS
        .iter()
        .any(|opening| text.starts_with(opening) && !opening.starts_with("what"))
    {
        return false;
    }
    let past = words
        .iter()
        .any(|word| ["did", "was", "were", "ago", "yesterday", "tomorrow"].contains(word));
    if past || mentions_a_year(words) {
        return false;
    }
    let asks = |at: usize| -> bool {
        // A time noun at `at`: asked for when nothing after it names another subject.
        let rest = &words[at + 1..];
        match rest {
            [aux, subject, ..] if AUXILIARIES.contains(aux) => {
                PRESENT_SUBJECTS.contains(subject) || subject.starts_with("it")
            }
            _ => true,
        }
    };
    for (at, word) in words.iter().enumerate() {
        let word = word.trim_end_matches("'s");
        if TIME_NOUNS.contains(&word) {
            // A question word before it, with only fillers between ("what's the date").
            let mut back = at;
            let mut asked = false;
            while back > 0 {
                back -= 1;
                let before = words[back];
                if ["what", "what's", "whats", "which"].contains(&before) {
                    asked = true;
                    break;
                }
                if !TIME_FILLERS.contains(&before) && !before.ends_with("'s") {
                    break;
                }
            }
            // "which day of the week", "what day of the month".
            if asked && asks(skip_of_the(words, at)) {
                return true;
            }
            // Marked as the present's: "the current time", "the date right now", "the clock",
            // or asked of a place in a few words ("time in New York?").
            let placed = words.get(at + 1) == Some(&"in") && words.len() <= 6;
            let marked = placed
                || at > 0 && ["current", "exact", "local", "today's"].contains(&words[at - 1])
                || words
                    .get(at + 1)
                    .is_some_and(|next| ["now", "today", "there", "here"].contains(next))
                || text.contains(&format!("{word} right now"))
                || text.contains(&format!("{word} at the moment"))
                || word == "clock";
            if marked && asks(at) {
                return true;
            }
            // A request for it: "tell me the time", "got the time?", "remind me of the date".
            let requested = at >= 2
                && words[at - 1] == "the"
                && ["me", "got", "have", "know", "of"].contains(&words[at - 2]);
            if requested && asks(at) {
                return true;
            }
        }
        // "is it morning yet?", "is it the weekend?", "how late is it?", "is it friday yet?".
        let month = word != "may" && crate::stated::MONTHS.contains(&word);
        if DAY_PARTS.contains(&word) || month || crate::ground::WEEKDAYS.contains(&word) {
            let near: Vec<&str> = words[at.saturating_sub(3)..at].to_vec();
            let after: Vec<&str> = words[at + 1..(at + 3).min(words.len())].to_vec();
            let is_it = near
                .windows(2)
                .any(|pair| pair == ["is", "it"] || pair == ["are", "we"])
                || (near.first() == Some(&"how") && after.starts_with(&["is", "it"]));
            if is_it {
                return true;
            }
        }
    }
    false
}

/// The index of the last word of "day of the week" from its first (`at`), else `at`.
fn skip_of_the(words: &[&str], at: usize) -> usize {
    match words.get(at + 1..at + 4) {
        Some([of, the, _]) if *of == "of" && *the == "the" => at + 3,
        _ => at,
    }
}

/// Whether `answer` says that live data could not be checked (the wording the rule teaches,
/// or a close paraphrase).
pub fn admits_no_live_data(answer: &str) -> bool {
    let answer = normalise(answer);
    ADMISSIONS.iter().any(|phrase| answer.contains(phrase))
}

/// Lower case, curly apostrophes made straight, spaces collapsed.
pub(crate) fn normalise(text: &str) -> String {
    let lowered = text
        .trim()
        .to_lowercase()
        .replace(['\u{2019}', '\u{2018}'], "'");
    lowered.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A question mark at the end, a question or request word at the start, or a short phrase
/// with no full stop ("weather in Oslo").
fn is_question_form(text: &str) -> bool {
    if text.ends_with('?') {
        return true;
    }
    if let Some(first) = words(text).next()
        && QUESTION_OPENINGS.contains(&first)
    {
        return true;
    }
    let short = words(text).count() <= 6;
    short && !text.ends_with('.') && !text.ends_with('!')
}

fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '&'))
        .filter(|word| !word.is_empty())
}

/// `phrase` in `text` on word boundaries, so "stock" does not match "stockholm".
fn contains_phrase(text: &str, phrase: &str) -> bool {
    text.match_indices(phrase).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + phrase.len()..].chars().next();
        let boundary = |c: Option<char>| c.is_none_or(|c| !c.is_alphanumeric());
        boundary(before) && boundary(after)
    })
}

/// "In 1998", "2015's": a year makes a question about that year, not about now.
fn mentions_a_year(words: &[&str]) -> bool {
    words.iter().any(|word| {
        let digits = word.trim_end_matches("'s");
        digits.len() == 4
            && digits.chars().all(|c| c.is_ascii_digit())
            && (digits.starts_with("1") || digits.starts_with("20"))
    })
}

/// "Who is the president of ...", "who's the CEO of ...": the office's holder now.
fn asks_for_office(text: &str) -> bool {
    let asks =
        text.starts_with("who is") || text.starts_with("who's") || text.starts_with("who are");
    asks && OFFICES.iter().any(|office| contains_phrase(text, office))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(table: &[&str], expected: bool) {
        let wrong: Vec<&&str> = table
            .iter()
            .filter(|question| is_realtime(question) != expected)
            .collect();
        assert!(
            wrong.is_empty(),
            "expected is_realtime = {expected} for {wrong:#?}"
        );
    }

    #[test]
    fn a_question_asks_the_weekday_when_it_names_the_day() {
        for question in [
            "What weekday is it over in Honolulu?",
            "Which day of the week is it?",
            "what day is it today",
            "is it friday yet?",
        ] {
            assert!(asks_the_weekday(question), "{question}");
        }
        for question in [
            "What is today's date?",
            "What time is it in Oslo?",
            "what day does the market open",
        ] {
            assert!(!asks_the_weekday(question), "{question}");
        }
    }

    #[test]
    fn questions_about_the_present_time_are_told_by_their_grammar() {
        let asks = [
            "What time is it?",
            "what's the date today",
            "Which day of the week is it?",
            "What is today's date?",
            "what's today?",
            "Could you tell me the current time in Sydney?",
            "What does the clock say in Oslo at the moment?",
            "Got the time?",
            "Is it evening yet?",
            "is it still night in Lima?",
            "How late is it over in Perth?",
            "Is it the weekend yet?",
            "Which month are we in?",
            "What hour is it right now?",
            "What date is it right now?",
            "time in New York?",
            "is it friday yet",
            "Is it December already?",
        ];
        let wrong: Vec<&&str> = asks.iter().filter(|text| !asks_the_time(text)).collect();
        assert!(wrong.is_empty(), "not seen as asking the time: {wrong:#?}");
        let not = [
            "What time does the store open?",
            "What day is the meeting?",
            "What year did the war end?",
            "Say something cheerful to start my day.",
            "How do I change the time on my watch?",
            "Write a poem about the evening sea.",
            "How many hours are in a week?",
            "What date was the Moon landing?",
            "Is it safe to swim at night?",
            "What did we plan for Friday?",
        ];
        let wrong: Vec<&&str> = not.iter().filter(|text| asks_the_time(text)).collect();
        assert!(wrong.is_empty(), "seen as asking the time: {wrong:#?}");
    }

    #[test]
    fn present_tense_live_questions_are_realtime() {
        check(
            &[
                "What's the weather in Oslo?",
                "what is the weather like in Paris today",
                "Is it raining in London right now?",
                "Will it rain tomorrow in Berlin? What's the forecast?",
                "weather in Tokyo",
                "How hot is it in Phoenix?",
                "What is the temperature in Madrid?",
                "Tell me the forecast for this weekend in Rome.",
                "Any news about the election?",
                "What are today's headlines?",
                "What's the latest news on SpaceX?",
                "What is the price of bitcoin?",
                "How much is Bitcoin worth right now?",
                "what's the current price of gold",
                "What is Apple's stock trading at?",
                "Check the NVIDIA stock price",
                "What is the euro to dollar exchange rate?",
                "How are Tesla shares doing today?",
                "What's the score of the Lakers game?",
                "Who is winning the match?",
                "What are the football scores tonight?",
                "What time is it?",
                "what time is it in Tokyo",
                "What's the time in New York right now?",
                "Tell me the local time in Sydney.",
                "What day is it today?",
                "What's the date?",
                "What is today's date?",
                "Who is the current president of France?",
                "Who is the CEO of OpenAI?",
                "Who's the prime minister of the UK?",
                "What is the latest version of Python?",
                "Is the Golden Gate Bridge open now?",
                "Is the shop still open?",
                "What's happening in Ukraine at the moment?",
                "Is there traffic on the M25?",
                "Give me the news.",
                "How's the traffic on I-95 right now?",
                "What are interest rates currently?",
                "What’s the weather doing in Dublin?",
                "Did the stock market go up today?",
                "What movies are playing tonight?",
                "WHAT IS THE WEATHER IN CAIRO?",
                "what is the newest iPhone",
                "Anything new in the news this week?",
            ],
            true,
        );
    }

    #[test]
    fn past_facts_how_to_and_general_questions_are_not() {
        check(
            &[
                "Who won the World Cup in 1998?",
                "What was the price of bitcoin in 2015?",
                "Who was the first president of the United States?",
                "When did the Berlin Wall fall?",
                "What was the weather like during the Battle of Hastings?",
                "Who invented the telephone?",
                "When was Python first released?",
                "How did the Roman Empire fall?",
                "What happened in the 2008 financial crisis?",
                "Who was the CEO of Apple before Tim Cook?",
                "How do I check the weather in Python?",
                "How do I get the current time in JavaScript?",
                "How to read a stock chart?",
                "How can I convert a time zone in Excel?",
                "Explain how weather forecasts work.",
                "How does the stock market work?",
                "Write a function that prints today's date.",
                "What does 'currently' mean?",
                "What is a stock split?",
                "What time zone is Tokyo in?",
                "How many time zones does Russia have?",
                "What is the time difference between London and New York?",
                "Which timezone does Arizona use?",
                "Is Chicago in the central time zone?",
                "What is the capital of France?",
                "How many legs does a spider have?",
                "Why is the sky blue?",
                "What is the boiling point of water?",
                "Who wrote Hamlet?",
                "Translate 'good morning' into Spanish.",
                "Summarise this paragraph for me please, it is about cats and dogs and their owners.",
                "I read the news yesterday and it was grim.",
                "The weather was lovely on our holiday.",
                "What is the square root of 144?",
                "Can you help me write a cover letter?",
                "What are some good names for a cat?",
                "Define photosynthesis.",
                "What does GDP stand for?",
                "Why do prices rise with inflation?",
                "What is an exchange rate?",
                "List the planets in order.",
                "Who painted the Mona Lisa?",
            ],
            false,
        );
    }

    #[test]
    fn admissions_are_recognised_and_values_are_not() {
        let admits = [
            "Live data can't be checked right now, so I cannot tell you the price.",
            "I can’t check the weather at the moment.",
            "I'm unable to check current prices.",
            "I don't have access to real-time information.",
            "Sorry, I cannot access live scores.",
        ];
        let states = [
            "It is 14°C and sunny in Oslo.",
            "Bitcoin is trading at $43,000.",
            "The score is 2-1.",
            "",
        ];
        for answer in admits {
            assert!(admits_no_live_data(answer), "{answer}");
        }
        for answer in states {
            assert!(!admits_no_live_data(answer), "{answer}");
        }
    }
}

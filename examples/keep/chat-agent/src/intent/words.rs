//! The words of a message, read for deciding: each address one word, the rest lower case
//! without apostrophes and hyphens (`don't` is `dont`, `to-do` is `todo`), each with its
//! sentence and clause; and the lists of words each role is recognised by. A verb or noun in a
//! list also matches its forms (`reads`, `reading`, `fetched`, `grabbing`, `utilities`).

/// Words of a message read for deciding; past it a message is a long text, not a request.
const WORDS_MAX: usize = 1_000;

/// A list of words, written as one string with spaces between them.
#[derive(Debug, Clone, Copy)]
pub(super) struct Words(&'static str);

impl Words {
    /// Whether `word` is one of the list.
    pub(super) fn has(self, word: &str) -> bool {
        self.0.split_whitespace().any(|listed| listed == word)
    }

    /// Whether `word` is one of the list or a form of one.
    pub(super) fn has_form(self, word: &str) -> bool {
        self.form_of(word).is_some()
    }

    /// The word of the list that `word` is, or is a form of.
    pub(super) fn form_of(self, word: &str) -> Option<&'static str> {
        let bases = bases(word);
        self.0
            .split_whitespace()
            .find(|listed| *listed == word || bases.iter().any(|base| base == listed))
    }
}

/// Words that drop what the agent asked for (`never mind`).
pub(super) const DROPPING: Words = Words("nevermind cancel forget stop nothing");
/// Request words that only ask a question: enough for a plan with a goal (`what steps should I
/// take to ...`), not for one without (`what is a roadmap?`).
pub(super) const QUESTIONS: Words = Words("what whats which how hows where can could would will");
/// Words that ask for something, before what is asked for.
pub(super) const REQUEST: Words = Words(
    "make create draw write give build put come prepare draft sketch suggest propose need \
    want help show lay map devise work get please lets what whats which how hows where \
    list outline generate produce recommend provide send set can could would will plan \
    wish",
);
/// Nouns of a plan.
pub(super) const PLAN_NOUNS: Words =
    Words("plan checklist roadmap itinerary schedule timeline gameplan todo todos agenda");
/// After `plan`, a sign it is a plan that exists already (`my plan worked`).
pub(super) const PLAN_EXISTS_NEXT: Words = Words(
    "is was were went worked works failed fails sounds looks seems fell changed didnt \
    doesnt isnt wasnt has had",
);
/// Before `plan` followed by `to` or `on`, an intention (`I plan to go`), not a request.
pub(super) const SUBJECTS: Words = Words("i we they he she you im were");
/// Before `plan` used as a verb (`help me plan`, `want to plan`, `let's plan`).
pub(super) const PLAN_VERB_BEFORE: Words = Words("me us please lets help you to");
/// After `plan` used as a verb: its object.
pub(super) const PLAN_VERB_OBJECT: Words = Words(
    "my our a an the this that out for how some your his her their it everything ahead what \
    me us",
);
/// Words that ask for a plan by themselves, with or without a goal (`break it down`, `where
/// do I begin?`).
pub(super) const PLAN_ACTIONS: Words =
    Words("break map lay sketch walk prepare organise organize arrange ready start begin outline");
/// Verbs of a plan asked for by their own phrase (`help me organise ...`, `outline how to ...`).
pub(super) const PLAN_VERBS: Words = Words("prepare organise organize arrange ready outline plan");
/// Words opening a clause that is no goal (`Hi there, can you make me a plan?`).
pub(super) const NOT_GOALS: Words = Words(
    "hi hello hey thanks thank ok okay great yes no please well so now that this sure cool \
    nice good wow what how can could would will do and but",
);
/// A goal's opening words that only say the person has it (`I want to get fit`: `get fit`),
/// longest first.
pub(super) const HAVING_A_GOAL: &[&[&str]] = &[
    &["i", "would", "like", "to"],
    &["im", "going", "to"],
    &["i", "am", "going", "to"],
    &["i", "want", "to"],
    &["i", "need", "to"],
    &["i", "have", "to"],
    &["we", "want", "to"],
    &["we", "need", "to"],
    &["we", "have", "to"],
    &["id", "like", "to"],
    &["i", "am"],
    &["we", "are"],
    &["i", "will"],
    &["we", "will"],
    &["im"],
    &["ill"],
];
/// Before `steps`: a request for the steps themselves (`what steps`, `the next steps`).
pub(super) const STEPS_BEFORE: Words = Words(
    "what which the some few next main key concrete practical simple clear basic first \
    numbered easy exact necessary actionable specific small of any detailed",
);
/// After `steps`: what they are for (`steps to`, `steps I should take`).
pub(super) const STEPS_AFTER: Words =
    Words("to for i we should needed required involved would do toward towards in on");
/// Words linking a plan word to its goal.
pub(super) const CONNECTORS: Words =
    Words("for to on about with toward towards regarding around so through in");
/// Words between a plan verb and its goal that are not the goal (`map out the steps for`).
pub(super) const PLAN_FILLER: Words =
    Words("a an the some out ahead steps step plan process simple clear good quick detailed me us");
/// Words that end a look back for a goal before a plan noun (`a moving house plan`).
pub(super) const BACK_STOP: Words = Words(
    "a an the my our your his her their this that some any me us i we you to for of with \
    and or simple quick short good detailed rough basic clear full complete practical \
    realistic concrete new little brief proper solid numbered nice small easy",
);
/// Goals that say nothing by themselves (`break it down`).
pub(super) const EMPTY_GOALS: Words = Words("it this that them one something things");
/// Tool words enough by themselves.
pub(super) const TOOL_NOUNS: Words =
    Words("tool plugin addon integration connector fetcher scraper crawler extension");
/// Vaguer things that are a tool only when they read something from the web.
pub(super) const THING_NOUNS: Words = Words(
    "something way app program script function bot thing utility service reader widget \
    capability watcher checker monitor",
);
/// Words that make something.
pub(super) const MAKE: Words = Words(
    "make build create write code develop craft design set add give get need want like \
    propose install deploy whip put implement generate produce provide wire spin new",
);
/// Words that make something only when what they make is new (`make a tool`, never `make the
/// tool read ...`).
pub(super) const MAKE_SOFT: Words = Words("make give get need want like set add put provide");
/// Words pointing at a thing that exists already.
pub(super) const EXISTING: Words = Words("the your that this my our");
/// Words that use a tool rather than make one.
pub(super) const USE: Words = Words("use run call try invoke apply");
/// Words that read something from an address.
pub(super) const READ: Words = Words(
    "fetch read check get grab load open download retrieve pull look see show visit query \
    call hit ping curl scrape tell use run try browse access view request what whats \
    summarise summarize test monitor watch poll inspect examine return print",
);
/// Words naming something on the web.
pub(super) const WEB: Words = Words(
    "page site website url address api endpoint feed link web internet online http https \
    server host",
);
/// The only words that may stand around an address for it to be a request to read it
/// (`https://... please`, `what about https://...?`, `is https://... up?`).
pub(super) const AROUND_ADDRESS: Words = Words(
    "please this here the page site link url about is it up ok now again and at on in there \
    hows how can could you whats what for me",
);
/// Words that turn the next few away (`don't make a plan`).
pub(super) const NEGATIONS: Words =
    Words("not no never dont doesnt didnt wont without nor neither");
/// How far back a negation reaches.
pub(super) const NEGATION_REACH: usize = 3;
/// How far back from a tool word its making word may be.
pub(super) const MAKE_REACH: usize = 5;
/// How far after a plan word its linking word may be.
pub(super) const CONNECTOR_REACH: usize = 6;

/// One word of a message.
#[derive(Debug)]
pub(super) struct Word {
    /// Lower case, without apostrophes and hyphens; empty for an address.
    pub(super) text: String,
    /// Its bytes in the message.
    pub(super) start: usize,
    pub(super) end: usize,
    /// Which sentence it is in.
    pub(super) sentence: usize,
    /// Which clause it is in: sentences are cut at commas, colons, dashes and brackets too.
    pub(super) clause: usize,
    /// Whether it is an address.
    pub(super) address: bool,
}

/// What `word` could be without a plural or verb ending: `making` gives `mak` and `make`,
/// `grabbing` gives `grabb` and `grab`, `utilities` gives `utility`.
fn bases(word: &str) -> Vec<String> {
    let mut bases = Vec::new();
    for suffix in ["ing", "ies", "es", "ed", "s"] {
        let Some(base) = word.strip_suffix(suffix) else {
            continue;
        };
        if base.len() < 2 {
            continue;
        }
        if suffix == "ies" {
            bases.push(format!("{base}y"));
            continue;
        }
        bases.push(base.to_owned());
        bases.push(format!("{base}e"));
        let mut chars = base.chars().rev();
        if chars.next().is_some() && chars.next() == base.chars().next_back() {
            let mut undoubled = base.to_owned();
            undoubled.pop();
            bases.push(undoubled);
        }
    }
    bases
}

/// The message's words, each address one word, with their sentences.
pub(super) fn words(message: &str, addresses: &[(usize, usize)]) -> Vec<Word> {
    let mut words = Vec::new();
    let mut sentence = 0;
    let mut clause = 0;
    let mut chars = message.char_indices().peekable();
    let mut addresses = addresses.iter().peekable();
    while let Some((at, c)) = chars.next() {
        if words.len() >= WORDS_MAX {
            break;
        }
        if let Some(&&(start, end)) = addresses.peek()
            && at == start
        {
            addresses.next();
            words.push(Word {
                text: String::new(),
                start,
                end,
                sentence,
                clause,
                address: true,
            });
            while chars.next_if(|&(next, _)| next < end).is_some() {}
            continue;
        }
        if c.is_alphanumeric() {
            let mut text: String = c.to_lowercase().collect();
            let mut end = at + c.len_utf8();
            while let Some(&(next_at, next)) = chars.peek() {
                if next.is_alphanumeric() {
                    text.extend(next.to_lowercase());
                } else if matches!(next, '\'' | '’' | '-') {
                    let mut ahead = message[next_at + next.len_utf8()..].chars();
                    if !ahead.next().is_some_and(char::is_alphanumeric) {
                        break;
                    }
                } else {
                    break;
                }
                end = next_at + next.len_utf8();
                chars.next();
            }
            words.push(Word {
                text,
                start: at,
                end,
                sentence,
                clause,
                address: false,
            });
            continue;
        }
        let ends_sentence = c == '\n'
            || (matches!(c, '.' | '!' | '?' | ';')
                && chars.peek().is_none_or(|&(_, next)| next.is_whitespace()));
        if ends_sentence {
            sentence += 1;
        }
        if ends_sentence || matches!(c, ',' | ':' | '(' | ')' | '-' | '–' | '—') {
            clause += 1;
        }
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_forms() {
        for (word, list, expected) in [
            ("reads", READ, true),
            ("reading", READ, true),
            ("fetches", READ, true),
            ("fetched", READ, true),
            ("grabbing", READ, true),
            ("making", MAKE, true),
            ("created", MAKE, true),
            ("writes", MAKE, true),
            ("tools", TOOL_NOUNS, true),
            ("utilities", THING_NOUNS, true),
            ("building", MAKE, true),
            ("bread", READ, false),
            ("toolbox", TOOL_NOUNS, false),
        ] {
            assert_eq!(list.has_form(word), expected, "{word}");
        }
    }

    #[test]
    fn words_keep_their_sentences_and_clauses() {
        let read: Vec<(String, usize, usize, bool)> = words(
            "Don't go, to-do: see https://x.example/a. Then I'd stop",
            &[(21, 40)],
        )
        .into_iter()
        .map(|word| (word.text, word.sentence, word.clause, word.address))
        .collect();
        let expected = [
            ("dont", 0, 0, false),
            ("go", 0, 0, false),
            ("todo", 0, 1, false),
            ("see", 0, 2, false),
            ("", 0, 2, true),
            ("then", 1, 3, false),
            ("id", 1, 3, false),
            ("stop", 1, 3, false),
        ];
        let expected: Vec<(String, usize, usize, bool)> = expected
            .iter()
            .map(|&(text, sentence, clause, address)| (text.to_owned(), sentence, clause, address))
            .collect();
        assert_eq!(read, expected);
    }
}
